package plan

import (
	"fmt"
	"slices"
	"testing"
)

// TestOverCap_ForgetsTheOldestEndedJobsBeyondTheCap: at or under
// MaxPastJobs nothing is forgotten; over it, the oldest ended jobs (by
// their time-ordered ids) go, as many as it is over and never more than
// the ended ones (a job in flight is never among them).
func TestOverCap_ForgetsTheOldestEndedJobsBeyondTheCap(t *testing.T) {
	id := func(i int) string { return fmt.Sprintf("20261203T%06dZ-%08x", i, i) }
	var ended []string
	for i := 10; i > 0; i-- {
		ended = append(ended, id(i))
	}
	if got := overCap(MaxPastJobs, ended); len(got) != 0 {
		t.Fatalf("at the cap forgot %v", got)
	}
	got := overCap(MaxPastJobs+3, ended)
	if want := []string{id(1), id(2), id(3)}; !slices.Equal(got, want) {
		t.Fatalf("forgot %v, want the three oldest %v", got, want)
	}
	if got := overCap(MaxPastJobs+50, ended); len(got) != len(ended) {
		t.Fatalf("forgot %d, want every ended job (%d) and no other", len(got), len(ended))
	}
}
