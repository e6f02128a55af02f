/* A CPU-only program that exercises every kind of NVTX annotation coach reads, for recording an
 * Nsight Systems export on a machine without a GPU:
 *   - push/pop ranges nested three deep on the main thread, and two deep on a worker thread;
 *   - a start/end range opened on the main thread and closed on the worker;
 *   - a mark;
 *   - a range in a named domain whose text is a registered string (exported as a string id);
 *   - a range whose text is not valid UTF-8 (bytes 0xff 0xfe).
 * Built and recorded by scripts/record-nsys-nvtx-cpu.sh (see PROVENANCE.md).
 */
#include <pthread.h>
#include <time.h>

#include "nvtx3/nvToolsExt.h"

static nvtxRangeId_t handoff;

static void work_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void *worker(void *arg) {
    (void)arg;
    nvtxRangePushA("worker");
    work_ms(2);
    nvtxRangePushA("worker-inner");
    work_ms(3);
    nvtxRangePop();
    nvtxRangeEnd(handoff); /* the start/end range ends on another thread than it began */
    nvtxRangePop();
    return NULL;
}

int main(void) {
    nvtxDomainHandle_t domain = nvtxDomainCreateA("coach-demo");
    nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "registered-range");

    nvtxRangePushA("outer");
    work_ms(1);
    nvtxRangePushA("middle");
    work_ms(1);
    nvtxRangePushA("inner");
    work_ms(2);
    nvtxMarkA("checkpoint");
    nvtxRangePop();
    nvtxRangePop();

    handoff = nvtxRangeStartA("handoff");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);

    nvtxEventAttributes_t attr = {0};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = registered;
    nvtxDomainRangePushEx(domain, &attr);
    work_ms(1);
    nvtxDomainRangePop(domain);

    nvtxRangePushA("bytes-\xff\xfe-end");
    work_ms(1);
    nvtxRangePop();

    nvtxRangePop(); /* outer */
    return 0;
}
