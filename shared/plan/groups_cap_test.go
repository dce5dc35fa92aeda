package plan

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/jobs"
)

// TestWithinBudget_AJobHoldsAtMostMaxGroups: with no byte budget and no
// file cap, a plan of more one-file groups than a job item can record
// (jobs.MaxGroups) keeps the first MaxGroups and defers the rest, paced
// by nothing (so the job continues at once); an exchange counts its maps
// and its reduces.
func TestWithinBudget_AJobHoldsAtMostMaxGroups(t *testing.T) {
	p := &Planner{}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	oneFile := func(n int) []compaction.Group {
		gs := make([]compaction.Group, n)
		for i := range gs {
			gs[i] = compaction.Group{Tasks: []table.FileScanTask{{}}, TotalSizeBytes: 10}
		}
		return gs
	}
	kept, _, deferred, deferredBytes, paced := p.withinBudget(context.Background(), log, "t", nil, oneFile(jobs.MaxGroups+5), nil, 0, 0, 0, false)
	if len(kept) != jobs.MaxGroups || deferred != 5 || deferredBytes != 50 || paced {
		t.Fatalf("kept %d, deferred %d (%d bytes), paced %v; want %d kept, 5 deferred (50 bytes), not paced", len(kept), deferred, deferredBytes, paced, jobs.MaxGroups)
	}
	kept, _, deferred, _, _ = p.withinBudget(context.Background(), log, "t", nil, oneFile(jobs.MaxGroups), nil, 0, 0, 0, false)
	if len(kept) != jobs.MaxGroups || deferred != 0 {
		t.Fatalf("at the cap: kept %d, deferred %d; want all kept", len(kept), deferred)
	}
	x := exchangePlan{maps: oneFile(2), reduces: 3}
	kept, keptX, deferred, _, _ := p.withinBudget(context.Background(), log, "t", nil, oneFile(jobs.MaxGroups-4), []exchangePlan{x}, 0, 0, 0, false)
	if len(kept) != jobs.MaxGroups-4 || len(keptX) != 0 || deferred != 2 {
		t.Fatalf("kept %d groups and %d exchanges, deferred %d; want the exchange (2 maps, 3 reduces) deferred", len(kept), len(keptX), deferred)
	}
}

// TestWithinBudget_AThrottledJobHoldsItsWaveAndTheRestWaits: a throttle's
// bound below jobs.MaxGroups keeps that many groups and paces the rest
// (they wait for a later visit instead of the next job at once); a first
// exchange larger than the bound is still kept whole, so the job never
// holds no group.
func TestWithinBudget_AThrottledJobHoldsItsWaveAndTheRestWaits(t *testing.T) {
	p := &Planner{}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	oneFile := func(n int) []compaction.Group {
		gs := make([]compaction.Group, n)
		for i := range gs {
			gs[i] = compaction.Group{Tasks: []table.FileScanTask{{}}, TotalSizeBytes: 10}
		}
		return gs
	}
	kept, _, deferred, deferredBytes, paced := p.withinBudget(context.Background(), log, "t", nil, oneFile(12), nil, 0, 0, 5, false)
	if len(kept) != 5 || deferred != 7 || deferredBytes != 70 || !paced {
		t.Fatalf("kept %d, deferred %d (%d bytes), paced %v; want 5 kept, 7 deferred (70 bytes), paced", len(kept), deferred, deferredBytes, paced)
	}
	kept, _, deferred, _, paced = p.withinBudget(context.Background(), log, "t", nil, oneFile(5), nil, 0, 0, 5, false)
	if len(kept) != 5 || deferred != 0 || paced {
		t.Fatalf("at the bound: kept %d, deferred %d, paced %v; want all kept, not paced", len(kept), deferred, paced)
	}
	x := exchangePlan{maps: oneFile(2), reduces: 3}
	kept, keptX, deferred, _, paced := p.withinBudget(context.Background(), log, "t", nil, oneFile(2), []exchangePlan{x}, 0, 0, 1, false)
	if len(kept) != 1 || len(keptX) != 0 || deferred != 3 || !paced {
		t.Fatalf("bound 1: kept %d groups and %d exchanges, deferred %d, paced %v; want 1 group kept, the rest (1 group, 2 maps) deferred and paced", len(kept), len(keptX), deferred, paced)
	}
	kept, keptX, _, _, _ = p.withinBudget(context.Background(), log, "t", nil, nil, []exchangePlan{x}, 0, 0, 1, false)
	if len(kept) != 0 || len(keptX) != 1 {
		t.Fatalf("bound 1, one exchange of 5 groups: kept %d groups and %d exchanges; want the exchange", len(kept), len(keptX))
	}
}
