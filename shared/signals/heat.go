package signals

import (
	"context"
	"time"
)

// DayReader reads a table's recorded query signals (Store).
type DayReader interface {
	Days(ctx context.Context, table string, since, now time.Time) ([]Day, error)
}

// HeatReader adapts the query signals to the planner (plan.Heat): the last four
// weeks' partition counts, decayed (PartitionHeat).
type HeatReader struct {
	Signals DayReader
	Now     func() time.Time
}

// PartitionHeat implements plan.Heat.
func (h HeatReader) PartitionHeat(ctx context.Context, table string) (map[string]float64, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	days, err := h.Signals.Days(ctx, table, now().AddDate(0, 0, -28), now())
	if err != nil {
		return nil, err
	}
	return PartitionHeat(days, now(), DefaultHalfLife), nil
}
