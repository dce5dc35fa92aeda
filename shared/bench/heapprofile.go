package bench

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// HeapProfileEnv names a file a benchmark child writes a heap profile to,
// taken when its live heap was largest (sampled every 200 ms): what held
// the memory at the peak, for `go tool pprof -sample_index=inuse_space`.
const HeapProfileEnv = "ICEKEEPER_BENCH_HEAP_PROFILE"

// profilePeakHeap samples the live heap until ctx ends and writes a heap
// profile to path whenever it reaches a new maximum (by at least 5%).
func profilePeakHeap(ctx context.Context, path string) {
	var ms runtime.MemStats
	var peak uint64
	write := func() {
		f, err := os.Create(path)
		if err != nil {
			return
		}
		// debug=0 with a GC first: the profile shows what was live.
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		_ = f.Close()
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak+peak/20 {
				peak = ms.HeapInuse
				write()
			}
		}
	}
}
