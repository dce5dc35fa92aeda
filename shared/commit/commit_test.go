package commit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"
)

func TestIsConflict_ClassifiesStaleBaseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"iceberg-go commit failed", fmt.Errorf("commit: %w", table.ErrCommitFailed), true},
		{"sql catalog stale base", errors.New("requirement failed: branch \"main\" has changed: expected id 1, found 2"), true},
		{"wrapped stale base", fmt.Errorf("commit table: %w", errors.New("requirement failed: branch main was created concurrently")), true},
		{"invalid operation", fmt.Errorf("%w: bad file", table.ErrInvalidOperation), false},
		{"network", errors.New("dial tcp: connection refused"), false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		if got := IsConflict(tc.err); got != tc.want {
			t.Errorf("%s: IsConflict = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBackoff_IsCappedAndJittered(t *testing.T) {
	t.Parallel()
	for attempt := 0; attempt < 20; attempt++ {
		d := backoff(100_000_000, attempt) // 100ms base
		if d <= 0 || d > 10_000_000_000 {
			t.Fatalf("attempt %d: backoff %v out of (0, 10s]", attempt, d)
		}
	}
}
