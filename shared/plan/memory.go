package plan

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ErrTooLargeToPlan: planning the table would hold more file metadata than
// the planner's memory allows. It is terminal (counted towards the
// table's backoff): only more memory for the planner fixes it.
var ErrTooLargeToPlan = errors.New("plan: the table has too many files for the planner's memory")

// Scan planning (iceberg-go's Scan.PlanFiles) holds every live data file
// of the snapshot at once, with its column statistics. Measured
// 2026-12-01 (docs/PERFORMANCE.md): about 600 bytes per file and 550 more
// per column with statistics. The estimate uses less than that on purpose:
// it refuses a table only when planning is sure to exceed the limit.
const (
	planningBytesPerFile   = 500
	planningBytesPerColumn = 450
	// maxStatsColumns is write.metadata.metrics.max-inferred-column-defaults'
	// default: writers keep statistics for the first 100 columns.
	maxStatsColumns = 100
)

// SetMemoryBudget makes the planner refuse (ErrTooLargeToPlan) a table
// whose scan planning needs more than budget bytes; 0 (the default)
// refuses none. The functions set it to Go's memory limit.
func (p *Planner) SetMemoryBudget(budget int64) { p.memoryBudget = budget }

// planningMemory estimates the memory scan planning of snap needs from
// its manifest list alone (one read, which planning repeats from cache):
// the live data files times what one file with statistics costs. known
// is false when a manifest does not count its files (v1).
func planningMemory(ctx context.Context, tbl *table.Table, snap *table.Snapshot) (files int64, bytes int64, known bool, err error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, false, err
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
	// Top-level columns: a nested column's leaves each carry statistics
	// too, so counting it once keeps the estimate low.
	columns := min(len(tbl.Schema().AsStruct().FieldList), maxStatsColumns)
	return files, files * (planningBytesPerFile + planningBytesPerColumn*int64(columns)), true, nil
}

// checkPlanningMemory refuses a snapshot too large to plan within the
// planner's memory budget.
func (p *Planner) checkPlanningMemory(ctx context.Context, tbl *table.Table, snap *table.Snapshot) error {
	if p.memoryBudget <= 0 {
		return nil
	}
	files, need, known, err := planningMemory(ctx, tbl, snap)
	if err != nil || !known || need <= p.memoryBudget {
		return err
	}
	return fmt.Errorf("%w: snapshot %d has %d live data files; scan planning holds every file's metadata and column statistics, at least %d MB here, and the planner's memory limit is %d MB: give the planner more memory (the CDK context %q, or the function's memory size)",
		ErrTooLargeToPlan, snap.SnapshotID, files, need>>20, p.memoryBudget>>20, "plannerMemoryMb")
}
