package stage

import (
	"math"
	"runtime/debug"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestMemoryLimit_IsAShareOfTheFunctionsMemoryUnlessGOMEMLIMITIsSet(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want int64
		bad  bool
	}{
		{map[string]string{}, 0, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1769"}, 1669437849, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512", "GOMEMLIMIT": "300MiB"}, 0, false},
		// A small function keeps MemoryHeadroomMB outside the limit.
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"}, 384 << 20, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "3008"}, 2838704947, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128"}, 64 << 20, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}, 0, true},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "64"}, 0, true},
	} {
		got, err := memoryLimit(env(c.env))
		if got != c.want || (err != nil) != c.bad {
			t.Errorf("%v: %d, %v; want %d (error %v)", c.env, got, err, c.want, c.bad)
		}
	}
}

func TestSetMemoryLimit_SetsTheRuntimesSoftLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	limit, err := SetMemoryLimit(env(map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}))
	if err != nil || limit != (1024-MemoryHeadroomMB)<<20 {
		t.Fatalf("limit %d, %v", limit, err)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Fatalf("runtime limit %d, want %d", got, limit)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if limit, err := SetMemoryLimit(env(map[string]string{})); err != nil || limit != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("no function memory: limit %d, %v, runtime %d", limit, err, debug.SetMemoryLimit(-1))
	}
}

func TestSetRewriterGC_RaisesGOGCOnlyUnderAMemoryLimitAndWithoutAnOperatorsGOGC(t *testing.T) {
	limitBefore := debug.SetMemoryLimit(-1)
	percentBefore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetMemoryLimit(limitBefore); debug.SetGCPercent(percentBefore) })

	debug.SetMemoryLimit(math.MaxInt64)
	if got := SetRewriterGC(env(map[string]string{})); got != 0 || debug.SetGCPercent(100) != 100 {
		t.Fatalf("no memory limit: set %d, want the default left alone", got)
	}
	debug.SetMemoryLimit(1 << 30)
	if got := SetRewriterGC(env(map[string]string{"GOGC": "150"})); got != 0 || debug.SetGCPercent(100) != 100 {
		t.Fatalf("GOGC set by the operator: set %d, want it left alone", got)
	}
	if got := SetRewriterGC(env(map[string]string{})); got != RewriterGCPercent || debug.SetGCPercent(100) != RewriterGCPercent {
		t.Fatalf("under a memory limit: set %d, want %d in the runtime", got, RewriterGCPercent)
	}
}
