package jobs

import "testing"

// TestWithWriteID_GoesIntoTheOneSETClause: an update expression holds one
// clause of each kind (DynamoDB's UpdateExpression grammar), so write_id
// joins the SET clause wherever it is, never a REMOVE or ADD clause after
// it (kumo accepts "REMOVE a, b = :v"; DynamoDB rejects it).
func TestWithWriteID_GoesIntoTheOneSETClause(t *testing.T) {
	for in, want := range map[string]string{
		"SET updated_at = :now":                       "SET write_id = :wid, updated_at = :now",
		"REMOVE deletions_left SET updated_at = :now": "REMOVE deletions_left SET write_id = :wid, updated_at = :now",
		"SET job_state = :to, committed_snapshot = :snap ADD committed_batches :entry REMOVE committing_batch": "SET write_id = :wid, job_state = :to, committed_snapshot = :snap ADD committed_batches :entry REMOVE committing_batch",
	} {
		if got := withWriteID(in); got != want {
			t.Errorf("withWriteID(%q) = %q, want %q", in, got, want)
		}
	}
}
