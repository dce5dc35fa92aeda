// Package pacing decides how soon a table icekeeper just planned for may be
// planned again: the cooldown a busy table's compactions keep, from how fast
// its writers add data files.
//
// A compaction claims the table's cooldown slot for the deployment's
// interval (ICEKEEPER_MIN_INTERVAL, an hour by default), so that a burst of
// commit events makes one planning. A table written every few minutes adds
// more small files in that hour than its compacted data needs: its file
// count drifts to several times its optimum before the next compaction may
// start. Iceberg's Flink TableMaintenance paces compaction by commits for
// the same reason (every 10 commits or 600 s by default).
//
// Next shortens the slot to when the table is expected to reach
// FileRatioGoal times its optimal file count, from the files it will have
// after the planned job and its writers' rate over the last interval: the
// count at which the planner's file-count goal (binpack.Rules) compacts a
// partition's small files, so the visit when the slot ends finds work.
//
// Invariants:
//   - the interval is never longer than the deployment's, never shorter
//     than its Floor, and never shorter than an owner's own
//     icekeeper.compaction.min-interval: pacing applies only to tables
//     without one (the caller's rule);
//   - a table its writers leave alone keeps the deployment's interval;
//   - only the writers' files count: replace snapshots (compactions, by
//     icekeeper or another engine) add none of the drift.
//   - Retry, the wait after a visit that planned nothing because another
//     job held the lease, is no planning's interval and may be shorter
//     than the Floor: the compactions it lets through stay an interval
//     apart, since the visit it follows planned none.
//
// Pure: no I/O, no clock.
package pacing

import (
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
)

// FileRatioGoal is the data files over the optimum a table should stay
// within: the fleet goal the soak measures (files per partition over its
// bytes divided by the target file size, rounded up).
const FileRatioGoal = 2

// FloorDivisor: the shortest interval pacing sets is the deployment's
// interval divided by it (15 minutes of the default hour).
const FloorDivisor = 4

// Floor is the shortest interval pacing sets within the deployment's
// interval.
func Floor(interval time.Duration) time.Duration { return interval / FloorDivisor }

// RetryDivisor: a visit that found another job holding the table's lease
// tries again after the deployment's interval divided by it (5 minutes of
// the default hour).
const RetryDivisor = 12

// Retry is how soon a table may be planned again after a visit that
// planned nothing because another job held its lease: a job of the
// maintenance chain (an expiry, a manifest rewrite) or a compaction that
// outlived its own slot. That visit spent no compaction, so waiting a
// whole interval (or Next's) would only delay the one the table's writers
// asked for; a job in flight ends in seconds to minutes. Shorter than
// Floor: it is no planning's interval but a retry of one.
func Retry(interval time.Duration) time.Duration { return interval / RetryDivisor }

// Table is what pacing needs of one table at a visit.
type Table struct {
	// FilesAfter are the data files the table will have once the job
	// planned at this visit commits (its data files when none was).
	FilesAfter int
	// Optimum are the data files its live data needs: per partition,
	// max(1, ceil(bytes / target file size)), summed.
	Optimum int
	// FilesPerHour is the rate at which its writers add data files.
	FilesPerHour float64
}

// Next is the interval before the table may be planned again: the time
// its writers take to bring it from FilesAfter to FileRatioGoal times its
// Optimum, within [Floor(interval), interval].
func Next(t Table, interval time.Duration) time.Duration {
	if interval <= 0 || t.FilesPerHour <= 0 {
		return interval
	}
	headroom := float64(FileRatioGoal*max(t.Optimum, 1) - t.FilesAfter)
	if headroom <= 0 {
		return Floor(interval)
	}
	hours := headroom / t.FilesPerHour
	if hours >= interval.Hours() {
		return interval
	}
	return max(time.Duration(hours*float64(time.Hour)), Floor(interval))
}

// WriteRate is the data files per hour the writers added to the main
// branch over the window before now: the added-data-files of every
// snapshot in the current snapshot's ancestry committed within the window,
// except replace snapshots (compactions). A snapshot without the summary
// property counts nothing.
func WriteRate(meta table.Metadata, now time.Time, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	since := now.Add(-window).UnixMilli()
	added := 0
	for snap := meta.CurrentSnapshot(); snap != nil && snap.TimestampMs > since; {
		if snap.Summary != nil && snap.Summary.Operation != table.OpReplace {
			if n, err := strconv.Atoi(snap.Summary.Properties["added-data-files"]); err == nil && n > 0 {
				added += n
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return float64(added) / window.Hours()
}
