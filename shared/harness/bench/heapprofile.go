package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// HeapProfileEnv names a file prefix: every benchmark child writes a heap
// profile to <prefix>.<mode>.<pid>, taken when its live heap was largest (sampled every 200 ms): what held
// the memory at the peak, for `go tool pprof -sample_index=inuse_space`.
const HeapProfileEnv = "ICEKEEPER_BENCH_HEAP_PROFILE"

// CPUProfileEnv names a file prefix: every benchmark child writes its CPU
// profile to <prefix>.<mode>.<pid> (`go tool pprof -top`).
const CPUProfileEnv = "ICEKEEPER_BENCH_CPU_PROFILE"

// profileCPU starts the child's CPU profile when CPUProfileEnv is set and
// returns the function that stops it.
func profileCPU(mode string) func() {
	prefix := os.Getenv(CPUProfileEnv)
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%s.%d", prefix, mode, os.Getpid()))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

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
