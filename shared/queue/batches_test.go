package queue_test

import (
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/shared/queue"
)

// TestBatches_StayWithinSendMessageBatchLimits: ten tasks of 192 KiB (the
// largest inline task) go in batches of one, since two would pass 256 KiB;
// small bodies go ten at a time; the order and every body are kept.
func TestBatches_StayWithinSendMessageBatchLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
		want  int
	}{
		{"inline tasks of 192 KiB", repeat(196_608, 10), 10},
		{"small tasks", repeat(1_000, 25), 3},
		{"mixed", []int{200_000, 60_000, 10, 262_144, 1}, 3},
		{"none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bodies := make([]string, len(tc.sizes))
			for i, n := range tc.sizes {
				bodies[i] = strings.Repeat("x", n)
			}
			got := queue.Batches(bodies)
			if len(got) != tc.want {
				t.Fatalf("%d batches, want %d", len(got), tc.want)
			}
			next := 0
			for _, b := range got {
				size := 0
				for _, i := range b {
					if i != next {
						t.Fatalf("batch %v out of order, want index %d", b, next)
					}
					next++
					size += len(bodies[i])
				}
				if len(b) > queue.MaxBatchEntries || len(b) > 1 && size > queue.MaxBatchBytes {
					t.Fatalf("batch of %d entries, %d bytes", len(b), size)
				}
			}
			if next != len(bodies) {
				t.Fatalf("%d of %d bodies batched", next, len(bodies))
			}
		})
	}
}

func repeat(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}
