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
	if err != nil || !known || need <= budget {
		return "", err
	}
	return fmt.Sprintf("snapshot %d has %d live data files; scan planning holds every file's path, size, partition and deletes, at least %d MB here, and the planner's memory limit is %d MB: give the planner more memory (the CDK context %q, or the function's memory size)",
		snap.SnapshotID, files, need>>20, budget>>20, "plannerMemoryMb"), nil
}

// AssessOption tunes Assess.
type AssessOption func(*assessOptions)

type assessOptions struct {
	memoryBudget int64
}

// WithMemoryBudget makes Assess skip the compaction plan of a snapshot
// whose scan planning needs more than budget bytes (TooLargeToPlan),
// saying so in Report.CompactionPlanSkipped, rather than run out of
// memory. The functions give it Go's memory limit.
func WithMemoryBudget(budget int64) AssessOption {
	return func(o *assessOptions) { o.memoryBudget = budget }
}
