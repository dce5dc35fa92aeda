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
//   - RemovingCommits: the writers' commits to the table's main branch
//     within Window before planning that removed data or delete files
//     (health.WriterCommits, from the metadata alone), out of
//     WriterCommits, all those icekeeper did not make.
//   - Concurrency: how many groups the stack rewrites at once
//     (ICEKEEPER_REWRITER_CONCURRENCY, the task queue's event source's
//     maximum concurrency, shared by every job).
//
// Why these commits, and why fewer groups pay: a compaction loses its
// work when a writer's commit removes one of its input files or a delete
// it applied, or when its own commit runs out of retries against the
// writers' (the conflict aborts). Appends never abort one (the committer
// keeps them), nor do position deletes or deletion vectors (it rebases
// them), so a table that only appends, however fast, is quiet: bounding
// its compaction would cost its readers and save nothing. A writer's
// commits that do remove files are the likelier to hit a job the more
// files the job holds and the longer it runs. A job of at most
// Concurrency groups runs in one wave, as long as one group's rewrite; a
// job of more runs in several, exposed all the while. So on a busy table
// a job takes at most one wave, fewer the busier the writers and the more
// jobs were aborted, and what it leaves waits for the next visit after
// the table's cooldown (longer-spaced) instead of following at once.
// Fewer groups at once would not make a job that holds them all any safer
// (it would run longer), which is why the bound is on the job, not its
// pace. Commits so frequent that the committer's retries run out show as
// conflict aborts, whatever they are.
package throttle

import (
	"fmt"
	"strings"
	"time"
)

// Window is how far back writer commits are counted.
const Window = time.Hour

// BusyWriterCommits is the number of writer commits that removed files
// within Window from which a table is busy: one every ten minutes on
// average. Each tenfold more is one level busier.
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
	// WriterCommits are the writers' commits within Window, and
	// RemovingCommits those of them that removed data or delete files
	// (the ones the decision weighs).
	WriterCommits   int
	RemovingCommits int
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
	ConflictAborts  int `json:"conflict_aborts,omitempty"`
	WriterCommits   int `json:"writer_commits"`
	RemovingCommits int `json:"removing_commits"`
	// Reason says why, for people.
	Reason string `json:"reason"`
}

// Bounded reports whether the decision bounds the job.
func (d Decision) Bounded() bool { return d.MaxGroups > 0 }

// WriterLevel is the writers' level for n removing commits within
// Window: 0 below BusyWriterCommits, then one more at each tenfold.
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
	removing := max(s.RemovingCommits, 0)
	w := WriterLevel(removing)
	d := Decision{Start: true, Level: w + k, ConflictAborts: k, WriterCommits: max(s.WriterCommits, removing), RemovingCommits: removing}
	writers := fmt.Sprintf("%d writer commits in the last %s, %d of them removing files", d.WriterCommits, short(Window), removing)
	conflicts := fmt.Sprintf("%d jobs in a row aborted by concurrent commits", k)
	if d.Level == 0 {
		d.Concurrency = c
		d.Reason = fmt.Sprintf("quiet: %s (busy from %d; appends and added deletes never abort a compaction), no job aborted by a concurrent commit since the last one committed: not bounded, %d groups at once", writers, BusyWriterCommits, c)
		return d
	}
	d.MaxGroups = max(1, c>>min(d.Level-1, 62))
	d.Concurrency = d.MaxGroups
	if w > 0 && k >= BackOffConflicts {
		d.Start = false
		d.Reason = fmt.Sprintf("backed off: %s while the writers are busy (%s, busy from %d): another job would likely meet them too; the next starts when their removing commits fall below %d in %s, or a job commits",
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
