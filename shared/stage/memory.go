package stage

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryShare is the share of the function's memory Go's soft memory limit
// is set to, and MemoryHeadroomMB the least left outside it: what the Go
// runtime does not count (the binary's pages, the OS's buffers) and what
// the heap overshoots the soft limit by. Measured (docs/PERFORMANCE.md):
// a rewriter's peak RSS stays 35 to 70 MB above its limit, so a 512 MB
// function limited to 90% (461 MB) peaked at 524 MB, over its memory.
const (
	MemoryShare      = 0.9
	MemoryHeadroomMB = 128
)

// memoryLimit is the soft memory limit for a function whose environment is
// getenv: none when GOMEMLIMIT is set (the Go runtime applied it) or the
// function's memory is unknown, else MemoryShare of
// AWS_LAMBDA_FUNCTION_MEMORY_SIZE, the memory Lambda gives the function
// in MB (a reserved variable: docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html),
// leaving at least MemoryHeadroomMB, and at least half of it.
func memoryLimit(getenv func(string) string) (int64, error) {
	if strings.TrimSpace(getenv("GOMEMLIMIT")) != "" {
		return 0, nil
	}
	v := strings.TrimSpace(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
	if v == "" {
		return 0, nil
	}
	mb, err := strconv.ParseInt(v, 10, 64)
	if err != nil || mb < 128 {
		return 0, fmt.Errorf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%q: want the function's memory in MB (128 or more)", v)
	}
	// Never below half the memory (a 128 MB function cannot leave 128 MB).
	return max((mb<<20)/2, min(int64(float64(mb<<20)*MemoryShare), (mb-MemoryHeadroomMB)<<20)), nil
}

// SetMemoryLimit sets Go's soft memory limit from the function's memory
// (memoryLimit), so that the garbage collector works harder as the heap
// nears it instead of the function running out of memory; it returns the
// limit set (0: none).
func SetMemoryLimit(getenv func(string) string) (int64, error) {
	limit, err := memoryLimit(getenv)
	if err != nil || limit == 0 {
		return 0, err
	}
	debug.SetMemoryLimit(limit)
	return limit, nil
}

// MemoryLimitMB is the soft memory limit, in MB, of a function of mb MB.
func MemoryLimitMB(mb int) int64 {
	limit, err := memoryLimit(func(k string) string {
		if k == "AWS_LAMBDA_FUNCTION_MEMORY_SIZE" {
			return strconv.Itoa(mb)
		}
		return ""
	})
	if err != nil {
		return 0
	}
	return limit >> 20
}

// RewriterGCPercent is the rewriter's garbage collector target (Go's
// GOGC) when a soft memory limit bounds its heap. A rewriter streams rows:
// its live heap is a few row groups, and at Go's default (100) the
// collector ran every time the heap doubled that, about a quarter of the
// rewriter's CPU on TPC-H lineitem. At 400 it used 0.76x (position deletes)
// and 0.72x (deletion vectors) the CPU of the default, in the same run,
// with a peak RSS of 440 to 470 MB in the stack's 1,769 MB function
// (docs/PERFORMANCE.md, "The rewriter's collector"). The memory limit
// still bounds the heap: near it the collector runs as often as the limit
// needs, never less often than at 100, so a larger group cannot run the
// function out of memory because of this setting. GOGC=off measured
// 0.70x at 1.6 GB, at the limit: not worth the margin.
const RewriterGCPercent = 400

// SetRewriterGC sets Go's GC percent to RewriterGCPercent when GOGC is not
// set (the runtime applied an operator's GOGC already) and a soft memory
// limit is in force (SetMemoryLimit); it returns the percent set (0: left
// as it was). Only for the rewriter: the planner's and committer's memory
// budgets count on the collector's default pace.
func SetRewriterGC(getenv func(string) string) int {
	if strings.TrimSpace(getenv("GOGC")) != "" || debug.SetMemoryLimit(-1) == math.MaxInt64 {
		return 0
	}
	debug.SetGCPercent(RewriterGCPercent)
	return RewriterGCPercent
}
