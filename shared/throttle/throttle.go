// Package throttle decides how hard one compaction job may press on a
// table that others are writing: whether the job starts now, and how many
// of the table's file groups it rewrites at once. It is a pure decision
// over what icekeeper already records; the planner feeds it and enforces
// it (package plan).
//
// Signals, all recorded before planning, none measured by it:
//   - ConflictAborts: the table's jobs aborted by concurrent commits in a
//     row since its last committed job (the lease item's failure record,
//     lease.Backoff of class lease.ClassConflict; a committed job clears
//     it).
//   - WriterCommits: the snapshots of the table's main branch committed
//     within Window before planning that icekeeper did not make
//     (health.WriterCommits, from the metadata alone).
//   - Concurrency: how many groups the stack rewrites at once
//     (ICEKEEPER_REWRITER_CONCURRENCY, the task queue's event source's
//     maximum concurrency, shared by every job).
//
// Why fewer groups pay on a busy table: a compaction loses its work when a
// writer's commit removes one of its input files or its own commit runs
// out of retries against the writers' (the conflict aborts), and both are
// the likelier the more files the job holds and the longer it runs. A job
// of at most Concurrency groups runs in one wave, as long as one group's
// rewrite; a job of more runs in several, exposed all the while. So on a
// busy table a job takes at most one wave, fewer the busier the writers
// and the more jobs were aborted, and what it leaves waits for the next
// visit after the table's cooldown (longer-spaced) instead of following at
// once. A quiet table is not bounded: its job takes every group the other
// caps allow, Concurrency at once. Fewer groups at once do not make a job
// that holds them all any safer (it runs longer), which is why the bound
// is on the job, not on its pace.
//
// Levels: the writers' level is 0 below BusyWriterCommits in the window, 1
// from it, and one more at each tenfold (60, 600, ...); each conflict abort
// in the row adds one. At level 0 the job is not bounded; at level L it
// takes at most Concurrency >> (L-1) groups, never fewer than one.
//
// Invariants (throttle_test.go):
//   - A job that starts may rewrite at least one group, and a bounded one
//     at most Concurrency.
//   - Monotone: more writer commits or more conflict aborts never allow
//     more groups, and never turn a back-off into a start.
//   - A quiet table (no conflict abort since its last commit, fewer than
//     BusyWriterCommits writer commits in the window) is not bounded.
//   - Back-off only on evidence of both contention signals: at least
//     BackOffConflicts aborts in a row while the writers are busy. It ends
//     when the writers' commits in the window fall below
//     BusyWriterCommits, or when a job commits (an operator's compact,
//     which ignores back-offs); the lease's own conflict backoff (section
//     15 of docs/DESIGN.md) spaces the attempts before that.
//   - Every decision says why, naming the signals it read.
package throttle

import (
	"fmt"
	"strings"
	"time"
)

// Window is how far back writer commits are counted.
const Window = time.Hour

// BusyWriterCommits is the number of writer commits within Window from
// which a table is busy: one every ten minutes on average. Each tenfold
// more is one level busier.
const BusyWriterCommits = 6

// BackOffConflicts is the number of conflict aborts in a row from which a
// busy table's next job does not start: as many as the per-table
// ConflictAbortsPerTable alarm fires at.
const BackOffConflicts = 3

// DefaultConcurrency is the stack's default rewriter concurrency (the
// CDK context rewriterMaxConcurrency).
const DefaultConcurrency = 10

// Signals are what the decision reads.
type Signals struct {
	// ConflictAborts are the table's jobs aborted by concurrent commits in
	// a row since its last committed job.
	ConflictAborts int
	// WriterCommits are the writers' commits within Window.
	WriterCommits int
	// Concurrency is the stack's rewriter concurrency (0 or less:
	// DefaultConcurrency).
	Concurrency int
}

// Decision is what one job may do.
type Decision struct {
	// Start: the job may start now. A false Start backs the table off.
	Start bool `json:"start"`
	// MaxGroups bounds the job's groups (at least 1); 0: not bounded, a
	// quiet table. The groups beyond it are left for later visits.
	MaxGroups int `json:"max_groups,omitempty"`
	// Concurrency is how many of the job's groups are rewritten at once:
	// MaxGroups when bounded, else the stack's.
	Concurrency int `json:"concurrency"`
	// Level is how contended the table is: 0 quiet.
	Level int `json:"level"`
	// The signals the decision read.
	ConflictAborts int `json:"conflict_aborts,omitempty"`
	WriterCommits  int `json:"writer_commits"`
	// Reason says why, for people.
	Reason string `json:"reason"`
}

// Bounded reports whether the decision bounds the job.
func (d Decision) Bounded() bool { return d.MaxGroups > 0 }

// WriterLevel is the writers' level for n commits within Window: 0 below
// BusyWriterCommits, then one more at each tenfold.
func WriterLevel(n int) int {
	level := 0
	for at := BusyWriterCommits; n >= at; at *= 10 {
		level++
		if at > n/10 { // the next tenfold would overflow past n anyway
			break
		}
	}
	return level
}

// Decide decides one job from the table's signals.
func Decide(s Signals) Decision {
	c := s.Concurrency
	if c <= 0 {
		c = DefaultConcurrency
	}
	k := max(s.ConflictAborts, 0)
	w := WriterLevel(max(s.WriterCommits, 0))
	d := Decision{Start: true, Level: w + k, ConflictAborts: k, WriterCommits: max(s.WriterCommits, 0)}
	writers := fmt.Sprintf("%d writer commits in the last %s", d.WriterCommits, short(Window))
	conflicts := fmt.Sprintf("%d jobs in a row aborted by concurrent commits", k)
	if d.Level == 0 {
		d.Concurrency = c
		d.Reason = fmt.Sprintf("quiet: %s (busy from %d), no job aborted by a concurrent commit since the last one committed: not bounded, %d groups at once", writers, BusyWriterCommits, c)
		return d
	}
	d.MaxGroups = max(1, c>>min(d.Level-1, 62))
	d.Concurrency = d.MaxGroups
	if w > 0 && k >= BackOffConflicts {
		d.Start = false
		d.Reason = fmt.Sprintf("backed off: %s while the writers are busy (%s, busy from %d): another job would likely meet them too; the next starts when their commits fall below %d in %s, or a job commits",
			conflicts, writers, BusyWriterCommits, BusyWriterCommits, short(Window))
		return d
	}
	var why string
	switch {
	case w > 0 && k > 0:
		why = fmt.Sprintf("busy writers (%s, level %d) and %s", writers, w, conflicts)
	case w > 0:
		why = fmt.Sprintf("busy writers (%s, busy from %d, level %d)", writers, BusyWriterCommits, w)
	default:
		why = fmt.Sprintf("%s (%s)", conflicts, writers)
	}
	d.Reason = fmt.Sprintf("%s: at most %d of the stack's %d groups at once, in one wave; the rest waits for a later visit", why, d.MaxGroups, c)
	return d
}

// short renders a duration without its zero minutes and seconds ("1h").
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
