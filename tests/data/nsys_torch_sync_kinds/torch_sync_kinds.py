"""One of each CUDA synchronisation and copy kind that coach's nsys reader maps, in NVTX ranges
named after the call, for checking the reader's kinds against a real Nsight Systems export:

  cudaStreamWaitEvent    (stream waits for an event recorded on another stream)
  cudaEventSynchronize   (host waits for an event)
  cudaStreamSynchronize  (host waits for a stream)
  cudaDeviceSynchronize  (host waits for the device)
  copies: pageable HtoD, pinned HtoD, pinned DtoH, DtoD; a memset; a CUDA graph replay

Recorded by scripts/record-nsys-sync-kinds.sh.
"""

import torch

N = 1 << 22
nvtx = torch.cuda.nvtx

x = torch.randn(N, device="cuda")
pinned = torch.empty(N, pin_memory=True)
pageable = torch.randn(N)
producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
done = torch.cuda.Event()
torch.cuda.synchronize()

nvtx.range_push("cudaStreamWaitEvent")
with torch.cuda.stream(producer):
    y = x * 2
    done.record(producer)
consumer.wait_event(done)
with torch.cuda.stream(consumer):
    z = y + 1
nvtx.range_pop()

nvtx.range_push("cudaEventSynchronize")
done.synchronize()
nvtx.range_pop()

nvtx.range_push("cudaStreamSynchronize")
consumer.synchronize()
nvtx.range_pop()

nvtx.range_push("copies")
x.copy_(pageable)                       # HtoD from pageable memory
x.copy_(pinned, non_blocking=True)      # HtoD from pinned memory
pinned.copy_(z, non_blocking=True)      # DtoH into pinned memory
w = z.clone()                           # DtoD
w.zero_()                               # memset
nvtx.range_pop()

nvtx.range_push("cuda-graph")
static_in = torch.zeros(N, device="cuda")
graph = torch.cuda.CUDAGraph()
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    static_out = static_in * 3 + 1      # warm-up outside the capture
torch.cuda.current_stream().wait_stream(side)
with torch.cuda.graph(graph):
    static_out = static_in * 3 + 1
graph.replay()
nvtx.range_pop()

nvtx.range_push("cudaDeviceSynchronize")
torch.cuda.synchronize()
nvtx.range_pop()
print("ok", float(static_out[0]), float(pinned[0]))
