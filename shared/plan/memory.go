package plan

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/health"
)

// ErrTooLargeToPlan: planning the table would hold more file metadata than
// the planner's memory allows (health.TooLargeToPlan). It is terminal
// (counted towards the table's backoff): only more memory for the planner
// fixes it.
var ErrTooLargeToPlan = errors.New("plan: the table has too many files for the planner's memory")

// checkPlanningMemory refuses a snapshot too large to plan, with the
// bounds of boundsColumns columns, within the planner's memory budget.
func (p *Planner) checkPlanningMemory(ctx context.Context, tbl *table.Table, snap *table.Snapshot, boundsColumns int) error {
	why, err := health.TooLargeToPlan(ctx, tbl, snap, boundsColumns, p.memoryBudget)
	if err != nil {
		return fmt.Errorf("estimate scan planning memory: %w", err)
	}
	if why != "" {
		return fmt.Errorf("%w: %s", ErrTooLargeToPlan, why)
	}
	return nil
}
