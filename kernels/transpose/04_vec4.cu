// Rung 04: 16-byte loads and stores: each thread moves one float4 in and one float4 out.
//
// Change: a block of 8 x 32 threads. Thread (tx, ty) loads the float4 at columns 4tx..4tx+3 of tile
// row ty (8 threads cover a 128-byte row), spreads it into the padded tile, and after the barrier
// gathers tile[4tx..4tx+3][ty] - four elements of column ty - into one float4 of out's row ty.
// Bank check with the 33-word pitch: element (i, j) is in bank (i + j) mod 32. A warp is 8 tx by 4
// ty; its stores hit banks ty + 4tx + k and its loads 4tx + k + ty: 32 distinct banks either way.
// Rung 03 needed four 4-byte accesses per thread for what one LDG.E.128 and one STG.E.128 do here.
// Counters: l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st} per byte down 4x; dram__throughput up.
#define TILE 32

extern "C" __global__ void __launch_bounds__(256)
transpose_vec4(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float tile[TILE][TILE + 1];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;  // tx: 0..7 (a float4 of a row), ty: 0..31 (a row)
    const unsigned r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    const float4 v = *reinterpret_cast<const float4*>(x + static_cast<size_t>(r0 + ty) * cols + c0 + 4 * tx);
    tile[ty][4 * tx + 0] = v.x;
    tile[ty][4 * tx + 1] = v.y;
    tile[ty][4 * tx + 2] = v.z;
    tile[ty][4 * tx + 3] = v.w;
    __syncthreads();
    const float4 w = make_float4(tile[4 * tx + 0][ty], tile[4 * tx + 1][ty], tile[4 * tx + 2][ty], tile[4 * tx + 3][ty]);
    *reinterpret_cast<float4*>(out + static_cast<size_t>(c0 + ty) * rows + r0 + 4 * tx) = w;
}
