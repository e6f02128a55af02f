// Host helpers shared by the correctness scenarios (scenario-21 on): arguments, a CUDA error check
// that names the failing call and its line, seeded inputs, and the one JSON result line.
//
// Each scenario is one CUDA C++ program built with nvcc (coach.correctness.build_command):
//
//     nvcc -arch=sm_90 -lineinfo -Xcompiler -rdynamic -o PROGRAM SOURCE.cu
//
// -lineinfo lets compute-sanitizer name the source line of each error without changing the code the
// optimiser makes; -rdynamic keeps the host functions' names for its host backtraces.
//
// Every program takes --variant buggy|fixed, --seed N (default: fresh from /dev/urandom), --repeat N
// (how many times the checked kernel runs: a race shows as a count that changes from run to run)
// and prints one line {"coach_result": 1, "variant": ..., "ok": ..., ...} on stdout. It exits 0 when
// its check passed, 1 when the check failed, and 2 when a CUDA call failed (after one line on stderr
// that names the call, the error and the line).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace scenario {

struct Args {
    std::string variant;    // "buggy" or "fixed"
    uint64_t seed = 0;
    int repeat = 5;
    bool check_launches = false;  // synchronise and check after every launch (a debugging switch)
};

inline const char* base_name(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
}

inline uint64_t fresh_seed() {
    uint64_t seed = 0;
    if (FILE* f = std::fopen("/dev/urandom", "rb")) {
        if (std::fread(&seed, sizeof seed, 1, f) != 1) seed = 0;
        std::fclose(f);
    }
    if (seed == 0) seed = static_cast<uint64_t>(std::time(nullptr)) * 2654435761u;
    return seed & 0xffffffffu;  // printed in the result line: keep it readable
}

[[noreturn]] inline void usage(const char* program, const char* problem) {
    std::fprintf(stderr, "%s: %s\nusage: %s --variant buggy|fixed [--seed N] [--repeat N] [--check-launches]\n",
                 base_name(program), problem, base_name(program));
    std::exit(64);
}

inline Args parse_args(int argc, char** argv) {
    Args args;
    bool seeded = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char* name) -> std::string {
            if (i + 1 >= argc) usage(argv[0], (std::string(name) + " needs a value").c_str());
            return argv[++i];
        };
        if (a == "--variant") {
            args.variant = value("--variant");
        } else if (a == "--seed") {
            args.seed = std::strtoull(value("--seed").c_str(), nullptr, 10);
            seeded = true;
        } else if (a == "--repeat") {
            args.repeat = std::atoi(value("--repeat").c_str());
        } else if (a == "--check-launches") {
            args.check_launches = true;
        } else {
            usage(argv[0], ("unknown argument " + a).c_str());
        }
    }
    if (args.variant != "buggy" && args.variant != "fixed") usage(argv[0], "--variant must be buggy or fixed");
    if (args.repeat < 1) usage(argv[0], "--repeat must be at least 1");
    if (!seeded) args.seed = fresh_seed();
    return args;
}

// ---- errors ------------------------------------------------------------------------------------

inline void check(cudaError_t err, const char* call, const char* file, int line) {
    if (err == cudaSuccess) return;
    std::fprintf(stderr, "CUDA error %s (%d) \"%s\" at %s:%d in %s\n", cudaGetErrorName(err), static_cast<int>(err),
                 cudaGetErrorString(err), base_name(file), line, call);
    std::exit(2);
}

// After a launch: the launch's own error (a bad configuration) always; with --check-launches also
// the kernel's execution error, by waiting for it. Without that wait an execution error surfaces
// at whichever later call synchronises first.
inline void check_launch(const char* kernel, bool wait, const char* file, int line) {
    std::string what = std::string("the launch of ") + kernel;
    check(cudaGetLastError(), what.c_str(), file, line);
    if (wait) {
        std::string done = std::string("cudaDeviceSynchronize() after ") + kernel;
        check(cudaDeviceSynchronize(), done.c_str(), file, line);
    }
}

}  // namespace scenario

#define CUDA_CHECK(call) ::scenario::check((call), #call, __FILE__, __LINE__)
#define CHECK_LAUNCH(kernel, wait) ::scenario::check_launch((kernel), (wait), __FILE__, __LINE__)

namespace scenario {

// ---- inputs ------------------------------------------------------------------------------------

// splitmix64: the same seed gives both variants the same inputs.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed * 0x9e3779b97f4a7c15ull + 1) {}
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
    float symmetric() { return 2.0f * uniform() - 1.0f; }                               // [-1, 1)
};

// ---- the result line ---------------------------------------------------------------------------

class Result {
  public:
    Result(const Args& args) {
        add("variant", args.variant);
        add("seed", static_cast<long long>(args.seed));
    }
    void add(const char* key, const std::string& v) { field(key) += "\"" + escape(v) + "\""; }
    void add(const char* key, const char* v) { add(key, std::string(v)); }
    void add(const char* key, bool v) { field(key) += v ? "true" : "false"; }
    void add(const char* key, int v) { add(key, static_cast<long long>(v)); }
    void add(const char* key, long long v) { field(key) += std::to_string(v); }
    void add(const char* key, double v) { field(key) += number(v); }
    void add(const char* key, const std::vector<long long>& v) {
        std::string& s = field(key);
        s += "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
        s += "]";
    }
    // Print the line and exit: 0 when the check passed, 1 when it failed.
    [[noreturn]] void emit(bool ok) {
        add("ok", ok);
        std::printf("{\"coach_result\": 1%s}\n", body_.c_str());
        std::fflush(stdout);
        std::exit(ok ? 0 : 1);
    }

  private:
    std::string& field(const char* key) {
        body_ += ", \"" + std::string(key) + "\": ";
        return body_;
    }
    static std::string number(double v) {
        if (!std::isfinite(v)) return "null";
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        return buf;
    }
    static std::string escape(const std::string& s) {
        std::string out;
        for (char c : s) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        return out;
    }
    std::string body_;
};

}  // namespace scenario
