package throttle

import (
	"math"
	"strings"
	"testing"
)

// TestDecide_TheDecisionTable: the decision for recorded signals, case by
// case, with the stack's concurrency at 10; the writes are commits that
// removed files, unless said otherwise.
func TestDecide_TheDecisionTable(t *testing.T) {
	for _, c := range []struct {
		name              string
		conflicts, writes int
		start             bool
		maxGroups, conc   int
		why               string
	}{
		{"a quiet table is not bounded", 0, 0, true, 0, 10, "quiet"},
		{"appends only, however many, are quiet", 0, -6000, true, 0, 10, "quiet"},
		{"a few writer commits are still quiet", 0, BusyWriterCommits - 1, true, 0, 10, "quiet"},
		{"busy writers: one wave", 0, BusyWriterCommits, true, 10, 10, "busy writers"},
		{"a commit a minute: half a wave", 0, 60, true, 5, 5, "busy writers"},
		{"ten a minute: a quarter", 0, 600, true, 2, 2, "busy writers"},
		{"a conflict abort on a quiet table: one wave", 1, 0, true, 10, 10, "aborted by concurrent commits"},
		{"two conflict aborts: half a wave", 2, 0, true, 5, 5, "aborted by concurrent commits"},
		{"busy writers and a conflict abort: half a wave", 1, BusyWriterCommits, true, 5, 5, "busy writers"},
		{"busy writers and two conflict aborts: fewer", 2, 60, true, 1, 1, "busy writers"},
		{"busy writers and three conflict aborts: back off", BackOffConflicts, BusyWriterCommits, false, 1, 1, "backed off"},
		{"many conflict aborts on a quiet table still start, with one group", 9, 0, true, 1, 1, "aborted by concurrent commits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A negative count stands for that many appends: writer
			// commits that removed nothing.
			s := Signals{ConflictAborts: c.conflicts, WriterCommits: c.writes, RemovingCommits: c.writes, Concurrency: 10}
			if c.writes < 0 {
				s.WriterCommits, s.RemovingCommits = -c.writes, 0
			}
			d := Decide(s)
			if d.Start != c.start || d.MaxGroups != c.maxGroups || d.Concurrency != c.conc || !strings.Contains(d.Reason, c.why) {
				t.Fatalf("Decide(conflicts %d, writes %d) = %+v; want start %t, max groups %d, concurrency %d, a reason with %q", c.conflicts, c.writes, d, c.start, c.maxGroups, c.conc, c.why)
			}
			if d.ConflictAborts != c.conflicts || d.WriterCommits != s.WriterCommits || d.RemovingCommits != s.RemovingCommits {
				t.Fatalf("signals recorded %+v, want %+v", d, s)
			}
		})
	}
}

// TestDecide_NeverZeroGroupsAndMonotone: over a grid of signals and
// stack concurrencies, a started job may rewrite at least one group and a
// bounded one at most the stack's concurrency; more writer commits or
// more conflict aborts never allow more groups, nor turn a back-off into
// a start.
func TestDecide_NeverZeroGroupsAndMonotone(t *testing.T) {
	groups := func(d Decision) int {
		if !d.Bounded() {
			return math.MaxInt
		}
		return d.MaxGroups
	}
	writes := []int{0, 1, 5, 6, 7, 59, 60, 61, 599, 600, 6000, 1 << 40}
	for _, conc := range []int{0, 1, 2, 3, 10, 50, 1000} {
		for k := 0; k <= 12; k++ {
			for i, w := range writes {
				d := Decide(Signals{ConflictAborts: k, WriterCommits: 2 * w, RemovingCommits: w, Concurrency: conc})
				if d.Start && groups(d) < 1 || d.Concurrency < 1 {
					t.Fatalf("conc %d, conflicts %d, writes %d: %+v allows no group", conc, k, w, d)
				}
				stack := conc
				if stack <= 0 {
					stack = DefaultConcurrency
				}
				if d.Bounded() && d.MaxGroups > stack {
					t.Fatalf("conc %d, conflicts %d, writes %d: %+v bounds above the stack's concurrency", conc, k, w, d)
				}
				if d.Reason == "" {
					t.Fatalf("conc %d, conflicts %d, writes %d: no reason", conc, k, w)
				}
				for _, more := range []Decision{
					Decide(Signals{ConflictAborts: k + 1, WriterCommits: 2 * w, RemovingCommits: w, Concurrency: conc}),
					Decide(Signals{ConflictAborts: k, RemovingCommits: writes[min(i+1, len(writes)-1)], Concurrency: conc}),
				} {
					if groups(more) > groups(d) || !d.Start && more.Start {
						t.Fatalf("conc %d, conflicts %d, writes %d: %+v, then with more contention %+v", conc, k, w, d, more)
					}
				}
			}
		}
	}
}

func TestWriterLevel_OneMoreAtEachTenfold(t *testing.T) {
	for n, want := range map[int]int{0: 0, 5: 0, 6: 1, 59: 1, 60: 2, 599: 2, 600: 3, math.MaxInt: 19} {
		if got := WriterLevel(n); got != want {
			t.Errorf("WriterLevel(%d) = %d, want %d", n, got, want)
		}
	}
}
