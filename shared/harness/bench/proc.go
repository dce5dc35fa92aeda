package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Proc is one measured child process.
type Proc struct {
	Wall    time.Duration
	CPU     time.Duration
	PeakRSS int64 // bytes
	Out     json.RawMessage
}

// child starts this executable as `<self> child <mode>` with its JSON
// arguments on its stdin (a raw rewrite's list of thousands of files is
// longer than an argument may be) and extra environment, waits for it, and
// returns its rusage and its JSON output (stdout). Peak RSS is the
// process's own maximum resident set.
// childEnviron is this process's environment without AWS_CA_BUNDLE. The
// children talk to the emulator over plain HTTP, and the functions on
// Lambda have no such bundle; with one, aws-sdk-go-v2 parses it at every
// LoadDefaultConfig, which iceberg-go's S3 FileIO calls for each table it
// opens: 14.5 ms of CPU a table, 55% of a sweep's CPU on a machine that
// sets it (docs/PERFORMANCE.md, "A sweep at S3's and Glue's latency").
func childEnviron() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_CA_BUNDLE=") })
}

func child(ctx context.Context, self string, env []string, mode string, args any) (*exec.Cmd, func() (Proc, error), error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, self, "child", mode)
	cmd.Stdin = bytes.NewReader(b)
	cmd.Env = append(childEnviron(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	wait := func() (Proc, error) {
		err := cmd.Wait()
		p := Proc{Wall: time.Since(start)}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			p.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		var co struct {
			Result  json.RawMessage `json:"result"`
			PeakRSS int64           `json:"peak_rss"`
		}
		if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &co); jerr == nil {
			p.Out, p.PeakRSS = co.Result, co.PeakRSS
		}
		if err != nil {
			tail := stderr.String()
			if len(tail) > 4000 {
				tail = tail[len(tail)-4000:]
			}
			return p, fmt.Errorf("child %s: %w\n%s", mode, err, tail)
		}
		return p, nil
	}
	return cmd, wait, nil
}

// ChildOutput is what a child prints: its result and its own peak resident
// memory. (getrusage's ru_maxrss of a child also counts the parent's pages
// the child had before exec, so the child reads its high-water mark, which
// exec resets, itself.)
type ChildOutput struct {
	Result  any   `json:"result"`
	PeakRSS int64 `json:"peak_rss"`
}

// SelfPeakRSS is this process's peak resident memory since exec (VmHWM),
// in bytes, or 0 where /proc is not available.
func SelfPeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "VmHWM:"), "kB")), &kb)
			return kb * 1024
		}
	}
	return 0
}

// runChild runs one child to completion.
func runChild(ctx context.Context, self string, env []string, mode string, args any) (Proc, error) {
	_, wait, err := child(ctx, self, env, mode, args)
	if err != nil {
		return Proc{}, err
	}
	return wait()
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
