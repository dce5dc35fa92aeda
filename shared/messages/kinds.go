package messages

import (
	"errors"
	"fmt"
	"strings"
)

// The kinds of tasks and commit requests.
//
// On the wire (FORMATS v1) neither message names its kind: a task is a
// deletion, a listing, a delete-file rewrite, one side of a two-stage sort
// or a compaction according to which of its fields are set, and a commit
// request likewise. Kind derives the kind from those fields, in one place;
// Validate (which Decode runs) rejects a message whose fields say two
// kinds at once, so a dispatcher is one switch over Kind and never picks
// the first of two contradictory flags. The constructors below build each
// kind, so no sender spells the fields out.

// TaskKind is what a task asks a rewriter to do.
type TaskKind string

// The task kinds, each with the field that makes it (none: compaction).
const (
	// TaskCompact rewrites one group's data files into new data files
	// (bin-pack, sort or z-order: SortOrderID, ZOrderFieldIDs).
	TaskCompact TaskKind = "compact"
	// TaskExchangeMap sorts one map group's rows into scratch pages of a
	// two-stage sort (Exchange, role map).
	TaskExchangeMap TaskKind = "exchange-map"
	// TaskExchangeReduce merges one key range of every map's pages into
	// new data files (Exchange, role reduce).
	TaskExchangeReduce TaskKind = "exchange-reduce"
	// TaskRewriteDeletes carries a group's delete files over to new delete
	// files (Deletes).
	TaskRewriteDeletes TaskKind = "rewrite-deletes"
	// TaskDelete deletes one part of a job's deletions record (Delete).
	TaskDelete TaskKind = "delete"
	// TaskList lists one prefix of an orphan cleanup's table location
	// (List).
	TaskList TaskKind = "list"
)

// TaskKinds lists every task kind.
var TaskKinds = []TaskKind{TaskCompact, TaskExchangeMap, TaskExchangeReduce, TaskRewriteDeletes, TaskDelete, TaskList}

// Kind is the task's kind. Call it on a validated task (Decode validates):
// on a contradictory one it returns the first kind it finds.
func (t Task) Kind() TaskKind {
	switch {
	case t.Delete != nil:
		return TaskDelete
	case t.List != nil:
		return TaskList
	case t.Deletes != nil:
		return TaskRewriteDeletes
	case t.Exchange != nil && t.Exchange.Role == ExchangeReduce:
		return TaskExchangeReduce
	case t.Exchange != nil:
		return TaskExchangeMap
	}
	return TaskCompact
}

// Validate rejects a task whose fields make it more than one kind, or an
// exchange side of no known role (ErrMalformed).
func (t Task) Validate() error {
	var set []string
	if t.Delete != nil {
		set = append(set, "delete")
	}
	if t.List != nil {
		set = append(set, "list")
	}
	if t.Deletes != nil {
		set = append(set, "deletes")
	}
	if t.Exchange != nil {
		set = append(set, "exchange")
		if r := t.Exchange.Role; r != ExchangeMap && r != ExchangeReduce {
			return fmt.Errorf("%w: task of job %s: exchange role %q, want %q or %q", ErrMalformed, t.JobID, r, ExchangeMap, ExchangeReduce)
		}
	}
	if len(set) > 1 {
		return fmt.Errorf("%w: task of job %s sets %s: a task is one kind", ErrMalformed, t.JobID, strings.Join(set, " and "))
	}
	if t.JobID == "" {
		return fmt.Errorf("%w: task without a job id", ErrMalformed)
	}
	return nil
}

// NewGroupTask asks for one group of a plan to be rewritten at pin: a
// compaction group, or with Exchange, Deletes and the sort fields set by
// the caller, one of the other rewrite kinds.
func NewGroupTask(jobID, tableName string, token int64, pin Pin, pg PlanGroup) Task {
	outSpec := pg.OutputSpecID
	return Task{Version: FormatVersion, JobID: jobID, Table: tableName, Group: pg.Index, Token: token, Pin: pin,
		SpecID: pg.SpecID, OutputSpecID: &outSpec, Partition: pg.Partition}
}

// NewDeleteTask asks for one part of a job's deletions to be deleted.
func NewDeleteTask(jobID, tableName string, token int64, d DeleteTask) Task {
	return Task{Version: FormatVersion, JobID: jobID, Table: tableName, Token: token, Delete: &d}
}

// NewListTask asks for one prefix of an orphan cleanup to be listed.
func NewListTask(jobID, tableName string, token int64, l ListTask) Task {
	return Task{Version: FormatVersion, JobID: jobID, Table: tableName, Token: token, List: &l}
}

// RequestKind is what a commit request asks the committer to do.
type RequestKind string

// The commit request kinds, each with the field that makes it.
const (
	// RequestCommit commits a job whose groups are all done (no field),
	// or for a batched job every batch whose groups are settled.
	RequestCommit RequestKind = "commit"
	// RequestBatch commits one batch of a batched job (Batch > 0).
	RequestBatch RequestKind = "batch"
	// RequestAbort ends a job without committing it (Abort, with Reason
	// and Class).
	RequestAbort RequestKind = "abort"
	// RequestDeletionsDone finishes a job whose fanned-out deletions all
	// ran (DeletionsDone).
	RequestDeletionsDone RequestKind = "deletions-done"
	// RequestListingDone merges what an orphan cleanup's fanned-out
	// listing found (ListingDone).
	RequestListingDone RequestKind = "listing-done"
	// RequestExchangeReady starts the reduces of exchange Exchange, whose
	// maps are all done (ExchangeReady).
	RequestExchangeReady RequestKind = "exchange-ready"
)

// RequestKinds lists every commit request kind.
var RequestKinds = []RequestKind{RequestCommit, RequestBatch, RequestAbort, RequestDeletionsDone, RequestListingDone, RequestExchangeReady}

// Kind is the request's kind. Call it on a validated request (Decode
// validates): on a contradictory one it returns the first kind it finds.
func (r CommitRequest) Kind() RequestKind {
	switch {
	case r.Abort:
		return RequestAbort
	case r.DeletionsDone:
		return RequestDeletionsDone
	case r.ListingDone:
		return RequestListingDone
	case r.ExchangeReady:
		return RequestExchangeReady
	case r.Batch > 0:
		return RequestBatch
	}
	return RequestCommit
}

// Validate rejects a request whose fields make it more than one kind, and
// fields that belong to a kind the request is not (ErrMalformed).
func (r CommitRequest) Validate() error {
	var set []string
	for _, f := range []struct {
		on   bool
		name string
	}{{r.Abort, "abort"}, {r.DeletionsDone, "deletions_done"}, {r.ListingDone, "listing_done"}, {r.ExchangeReady, "exchange_ready"}, {r.Batch != 0, "batch"}} {
		if f.on {
			set = append(set, f.name)
		}
	}
	var errs []error
	if len(set) > 1 {
		errs = append(errs, fmt.Errorf("sets %s: a request is one kind", strings.Join(set, " and ")))
	}
	if r.Batch < 0 {
		errs = append(errs, fmt.Errorf("batch %d: batches are numbered from 1", r.Batch))
	}
	if r.Exchange != 0 && !r.ExchangeReady {
		errs = append(errs, fmt.Errorf("exchange %d without exchange_ready", r.Exchange))
	}
	if (r.Reason != "" || r.Class != "") && !r.Abort {
		errs = append(errs, errors.New("reason or class without abort"))
	}
	if r.JobID == "" {
		errs = append(errs, errors.New("no job id"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: commit request for job %q: %w", ErrMalformed, r.JobID, err)
	}
	return nil
}

// CommitJob asks for a job to be committed (for a batched job: every
// batch whose groups are settled).
func CommitJob(jobID string) CommitRequest {
	return CommitRequest{Version: FormatVersion, JobID: jobID}
}

// CommitBatch asks for batch (from 1) of a batched job to be committed.
func CommitBatch(jobID string, batch int) CommitRequest {
	return CommitRequest{Version: FormatVersion, JobID: jobID, Batch: batch}
}

// AbortJob asks for a job to end without committing; class is the kind
// of failure (Fail*, counted towards the table's backoff) or "".
func AbortJob(jobID, reason, class string) CommitRequest {
	return CommitRequest{Version: FormatVersion, JobID: jobID, Abort: true, Reason: reason, Class: class}
}

// DeletionsDone says a job's fanned-out deletions all ran.
func DeletionsDone(jobID string) CommitRequest {
	return CommitRequest{Version: FormatVersion, JobID: jobID, DeletionsDone: true}
}

// ListingDone says an orphan cleanup's fanned-out listing all ran.
func ListingDone(jobID string) CommitRequest {
	return CommitRequest{Version: FormatVersion, JobID: jobID, ListingDone: true}
}

// ExchangeReady says every map of a job's exchange id is done.
func ExchangeReady(jobID string, id int) CommitRequest {
	return CommitRequest{Version: FormatVersion, JobID: jobID, ExchangeReady: true, Exchange: id}
}
