package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestProgress_PlainLinesWhenNotATerminal: off a terminal, a line at most
// every interval with groups, bytes, rate and time left, and a summary
// when the rewrites are done.
func TestProgress_PlainLinesWhenNotATerminal(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := newProgress(&out, false).(*progress)
	p.now = func() time.Time { return now }
	p.Planned(plan.Result{Table: "shop.orders", Groups: 4, InputBytes: 400 << 20})
	now = now.Add(time.Second)
	p.Rewritten(100 << 20)
	if out.Len() != 0 {
		t.Fatalf("printed before the interval: %q", out.String())
	}
	now = now.Add(progressEvery)
	p.Rewritten(100 << 20)
	want := "rewriting shop.orders: 2/4 groups, 200.0 MiB of 400.0 MiB, 18.2 MiB/s, about 11s left\n"
	if out.String() != want {
		t.Fatalf("line %q, want %q", out.String(), want)
	}
	out.Reset()
	now = now.Add(9 * time.Second)
	p.Rewritten(200 << 20)
	p.RewritesDone()
	if want := "rewrote shop.orders: 3/4 groups, 400.0 MiB in 20s (20.0 MiB/s)\n"; out.String() != want {
		t.Fatalf("summary %q, want %q", out.String(), want)
	}
	if newProgress(&out, true) != nil {
		t.Fatal("-q still reports progress")
	}
}

// TestProgress_LiveBarInATerminal runs `icekeeper demo` in a real terminal
// (tmux) and reads the screen: each table's bar ends with all its groups
// done, 100%, and the rate. Progress goes to stderr: stdout, the report,
// is redirected to a file and holds no bar.
func TestProgress_LiveBarInATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "icekeeper")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	socket := fmt.Sprintf("icekeeper-test-%d", os.Getpid())
	report := filepath.Join(dir, "report.txt")
	done := filepath.Join(dir, "done")
	script := fmt.Sprintf("cd %s && %s demo > %s; echo $? > %s; sleep 120", dir, bin, report, done)
	if out, err := exec.Command(tmux, "-L", socket, "new-session", "-d", "-x", "160", "-y", "40", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer exec.Command(tmux, "-L", socket, "kill-server").Run()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if b, err := os.ReadFile(done); err == nil {
			if code := strings.TrimSpace(string(b)); code != "0" {
				t.Fatalf("demo exited %s", code)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("demo did not finish")
		}
		time.Sleep(200 * time.Millisecond)
	}
	screen, err := exec.Command(tmux, "-L", socket, "capture-pane", "-p").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"demo.orders: 4/4 groups 100% |", "demo.events: 3/3 groups 100% |", "B/s)"} {
		if !strings.Contains(string(screen), want) {
			t.Errorf("the terminal does not show %q:\n%s", want, screen)
		}
	}
	if b, _ := os.ReadFile(report); bytes.Contains(b, []byte("100%")) || !bytes.Contains(b, []byte("OK")) {
		t.Errorf("stdout holds a bar, or no report:\n%s", b)
	}
}
