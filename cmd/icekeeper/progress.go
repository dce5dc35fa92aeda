package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// progressEvery is how often a progress line is printed when stderr is not
// a terminal.
const progressEvery = 10 * time.Second

// newProgress reports a cycle's rewrites on w (stderr): a live bar
// (schollz/progressbar) when w is a terminal, otherwise a plain line every
// progressEvery and one when the rewrites are done. Nil when quiet.
func newProgress(w io.Writer, quiet bool) localrun.Progress {
	if quiet {
		return nil
	}
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && term.IsTerminal(int(f.Fd())), every: progressEvery, now: time.Now}
}

// progress implements localrun.Progress. Safe for concurrent use.
type progress struct {
	w     io.Writer
	tty   bool
	every time.Duration
	now   func() time.Time

	mu                   sync.Mutex
	table                string
	groups, done         int
	total, doneBytes     int64
	started, lastPrinted time.Time
	bar                  *progressbar.ProgressBar
}

func (p *progress) Planned(r plan.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.table, p.groups, p.total, p.done, p.doneBytes = r.Table, r.Groups, r.InputBytes, 0, 0
	p.started, p.lastPrinted = p.now(), p.now()
	if !p.tty {
		return
	}
	p.bar = progressbar.NewOptions64(max(r.InputBytes, 1),
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.describe()),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
	)
}

func (p *progress) describe() string {
	return fmt.Sprintf("%s: %d/%d groups", p.table, p.done, p.groups)
}

func (p *progress) Rewritten(bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.doneBytes += bytes
	if p.bar != nil {
		p.bar.Describe(p.describe())
		_ = p.bar.Add64(bytes)
		return
	}
	if now := p.now(); now.Sub(p.lastPrinted) >= p.every {
		p.lastPrinted = now
		fmt.Fprintln(p.w, p.line(now))
	}
}

func (p *progress) RewritesDone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		// The bar finishes by itself when the bytes reach the total; a
		// cycle whose rewrites failed stops it where it is.
		switch {
		case p.bar.IsFinished():
		case p.done < p.groups:
			_ = p.bar.Exit()
			fmt.Fprintln(p.w)
		default:
			_ = p.bar.Finish()
		}
		p.bar = nil
		return
	}
	now := p.now()
	fmt.Fprintf(p.w, "rewrote %s: %d/%d groups, %s in %s (%s/s)\n", p.table, p.done, p.groups,
		humanBytes(p.doneBytes), now.Sub(p.started).Round(time.Millisecond), humanBytes(p.rate(now)))
}

// line is one plain progress line: groups, bytes, rate and time left.
func (p *progress) line(now time.Time) string {
	rate := p.rate(now)
	left := "unknown"
	if rate > 0 {
		left = "about " + time.Duration(float64(p.total-p.doneBytes)/float64(rate)*float64(time.Second)).Round(time.Second).String()
	}
	return fmt.Sprintf("rewriting %s: %d/%d groups, %s of %s, %s/s, %s left", p.table, p.done, p.groups,
		humanBytes(p.doneBytes), humanBytes(p.total), humanBytes(rate), left)
}

// rate is the input bytes rewritten per second so far.
func (p *progress) rate(now time.Time) int64 {
	secs := now.Sub(p.started).Seconds()
	if secs <= 0 {
		return 0
	}
	return int64(float64(p.doneBytes) / secs)
}
