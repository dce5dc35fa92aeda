package health

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Scan planning (package filescan, which Assess and the planner both run)
// holds every live data file of the snapshot at once, without its column
// statistics but the bounds of the columns it is asked for. Measured
// 2026-12-01 (docs/PERFORMANCE.md, "Planner at 1,000,000 files"): a live
// heap of about 370 bytes per file at its peak (the task, the file and its
// path), and a process of about 715 bytes per file when Go's memory limit
// is below what planning needs (2,000,000 files peaked at 1,487 MB in a
// 1024 MB function, which Lambda would have stopped, while 1,000,000
// peaked at 977 MB); 2 x 8 bytes and a bound's bytes per file and bounds
// column. The estimate uses less than that on purpose: it refuses a table
// only when planning is sure to exceed the budget.
const (
	planningBytesPerFile         = 600
	planningBytesPerBoundsColumn = 48
)

// ScanPlanningMemory estimates the memory scan planning of snap needs
// from its manifest list alone (one read, which planning repeats from
// cache): its live data files times what one costs, with the bounds of
// boundsColumns columns. known is false when a manifest does not count
// its files (v1).
func ScanPlanningMemory(ctx context.Context, tbl *table.Table, snap *table.Snapshot, boundsColumns int) (files, bytes int64, known bool, err error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, false, fmt.Errorf("open table IO: %w", err)
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return 0, 0, false, fmt.Errorf("read manifest list: %w", err)
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		added, existing := m.AddedDataFiles(), m.ExistingDataFiles()
		if added < 0 || existing < 0 {
			return 0, 0, false, nil
		}
		files += int64(added) + int64(existing)
	}
	return files, files * (planningBytesPerFile + planningBytesPerBoundsColumn*int64(boundsColumns)), true, nil
}

// TooLargeToPlan reports, for a snapshot whose scan planning (with the
// bounds of boundsColumns columns) needs more than budget bytes (0: no
// budget), why it is not planned: its files, the estimate and the budget.
// "" means it can be planned.
func TooLargeToPlan(ctx context.Context, tbl *table.Table, snap *table.Snapshot, boundsColumns int, budget int64) (string, error) {
	if budget <= 0 {
		return "", nil
	}
	files, need, known, err := ScanPlanningMemory(ctx, tbl, snap, boundsColumns)
	if err != nil || !known {
		return "", err
	}
	return tooLarge(snap, files, need, budget), nil
}

// tooLarge is TooLargeToPlan's verdict on an estimate.
func tooLarge(snap *table.Snapshot, files, need, budget int64) string {
	if budget <= 0 || need <= budget {
		return ""
	}
	return fmt.Sprintf("snapshot %d has %d live data files; scan planning holds every file's path, size, partition and deletes, at least %d MB here, and the planner's memory limit is %d MB: give the planner more memory (the CDK context %q, or the function's memory size)",
		snap.SnapshotID, files, need>>20, budget>>20, "plannerMemoryMb")
}

// AssessOption tunes Assess.
type AssessOption func(*assessOptions)

type assessOptions struct {
	memoryBudget int64
	gate         MemoryGate
}

// WithMemoryBudget makes Assess skip the compaction plan of a snapshot
// whose scan planning needs more than budget bytes (TooLargeToPlan),
// saying so in Report.CompactionPlanSkipped, rather than run out of
// memory. The functions give it Go's memory limit.
func WithMemoryBudget(budget int64) AssessOption {
	return func(o *assessOptions) { o.memoryBudget = budget }
}

// MemoryGate bounds the memory that assessments running at once in one
// process (a sweep's) hold for scan planning: each takes its estimate
// before it reads the snapshot's manifests and gives it back when it is
// done. golang.org/x/sync/semaphore's Weighted, sized to the memory
// budget, is one.
type MemoryGate interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// WithMemoryGate makes Assess hold its scan planning's estimate
// (ScanPlanningMemory) in gate while it reads the snapshot: at most the
// memory budget (the whole budget when a manifest does not count its
// files), nothing for a table too large to plan (it reads counts, not
// files). Assessments that together would need more than the budget wait
// for each other, so running them at once needs no more memory than one
// at a time; one alone never waits. Use with WithMemoryBudget and a gate
// of the budget's size.
func WithMemoryGate(gate MemoryGate) AssessOption {
	return func(o *assessOptions) { o.gate = gate }
}

// planningMemory estimates snap's scan planning, and decides whether it
// may be planned within o's budget (skip: why not) and what it holds of
// o's gate while it is assessed.
func (o assessOptions) planningMemory(ctx context.Context, tbl *table.Table, snap *table.Snapshot, boundsColumns int) (skip string, hold int64, err error) {
	if o.memoryBudget <= 0 && o.gate == nil {
		return "", 0, nil
	}
	files, need, known, err := ScanPlanningMemory(ctx, tbl, snap, boundsColumns)
	if err != nil {
		return "", 0, err
	}
	switch {
	case !known:
		hold = o.memoryBudget
	case o.memoryBudget > 0 && need > o.memoryBudget:
		return tooLarge(snap, files, need, o.memoryBudget), 0, nil
	default:
		hold = need
	}
	if o.gate == nil || o.memoryBudget <= 0 {
		return "", 0, nil
	}
	return "", min(hold, o.memoryBudget), nil
}
