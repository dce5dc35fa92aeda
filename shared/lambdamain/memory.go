package lambdamain

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryShare is the share of the function's memory Go's soft memory limit
// is set to: the rest is left to what the Go runtime does not count
// (goroutine stacks beyond the heap's, the binary, the OS's buffers).
const MemoryShare = 0.9

// memoryLimit is the soft memory limit for a function whose environment is
// getenv: none when GOMEMLIMIT is set (the Go runtime applied it) or the
// function's memory is unknown, else MemoryShare of
// AWS_LAMBDA_FUNCTION_MEMORY_SIZE, the memory Lambda gives the function
// in MB (a reserved variable: docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
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
	return int64(float64(mb<<20) * MemoryShare), nil
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
