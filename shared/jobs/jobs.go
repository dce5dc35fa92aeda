// Package jobs records maintenance jobs and their file groups in DynamoDB.
//
// A job is one maintenance action (Kind: a compaction, a delete-file
// rewrite, a manifest rewrite, a snapshot expiry, an orphan cleanup or a
// layout change) of one table pinned at one snapshot. It has one
// item (sort key "job") plus one item per file group (sort key
// "group#NNNNN"). Every state change is a conditional write on the expected
// current state and records a reason, so concurrent actors (redelivered
// rewriter tasks, a retried committer) agree on one outcome:
//
//	planned -> running -> committing -> committed
//	   |   \__________________^  |
//	   \          \              \
//	    +----------+--------------+-> failed | aborted
//
// (planned -> committing happens when every group finished before the
// planner marked the job running.)
//
// The committing state has an owner, the committer that entered it
// (committer_id). Only the owner may end it without a commit, and another
// committer may take it over only when it has not been touched for longer
// than a committer can live (TakeOver), so two committers never decide one
// job.
//
// A group goes pending -> done exactly once: the first attempt whose claim
// succeeds is the group's winner and only its descriptor can reach the
// commit. Claims are transactions that also check the job is still planned
// or running under the same lease token, so once the committer moves the job
// on, no attempt can claim anymore.
//
// Attribute names are snake_case with an underscore, which keeps them clear
// of DynamoDB's reserved words without expression attribute names.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/icekeeper/icekeeper/shared/messages"
)

// State is a job's state.
type State string

// Job states.
const (
	// Planned: the job record exists; tasks are being sent.
	Planned State = "planned"
	// Running: every task was sent; rewriters are working.
	Running State = "running"
	// Committing: the committer took the job; no more claims are accepted.
	Committing State = "committing"
	// Committed: the rewrite snapshot is in the table (terminal).
	Committed State = "committed"
	// Failed: an error ended the job; nothing was committed (terminal).
	Failed State = "failed"
	// Aborted: a safety check ended the job, e.g. a concurrent delete on a
	// rewritten file; nothing was committed (terminal).
	Aborted State = "aborted"
)

// States lists every job state.
func States() []State { return []State{Planned, Running, Committing, Committed, Failed, Aborted} }

// Terminal reports whether no further transition leaves s.
func (s State) Terminal() bool { return s == Committed || s == Failed || s == Aborted }

// GroupState is a file group's state.
type GroupState string

// Group states.
const (
	GroupPending GroupState = "pending"
	GroupDone    GroupState = "done"
	GroupFailed  GroupState = "failed"
)

// Sentinel errors. ErrNotFound, ErrNotRunning, ErrGroupSettled and
// ErrStateConflict are terminal for the caller's action; wrapped AWS errors
// are retryable.
var (
	ErrNotFound      = errors.New("jobs: not found")
	ErrNotRunning    = errors.New("jobs: job is not running under this lease token")
	ErrGroupSettled  = errors.New("jobs: group already settled")
	ErrStateConflict = errors.New("jobs: job is not in the expected state")
)

// DynamoDB is the subset of the DynamoDB client the store needs.
type DynamoDB interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Job is the record of one maintenance job.
type Job struct {
	ID    string `json:"job_id"`
	Table string `json:"table"`
	// Kind is what the job does (KindCompaction, KindRewriteDeletes,
	// KindRewriteManifests, KindExpire, KindRemoveOrphans,
	// KindChangeLayout); records written before kinds existed are
	// compactions.
	Kind  Kind  `json:"kind"`
	State State `json:"state"`
	// Reason says why the job is in its state (for failed and aborted jobs,
	// the cause).
	Reason  string `json:"reason,omitempty"`
	Trigger string `json:"trigger"`
	// Token is the lease token the job was planned under.
	Token int64 `json:"lease_token"`
	// Pin is the snapshot the job reads.
	MetadataLocation string `json:"metadata_location"`
	SnapshotID       int64  `json:"snapshot_id,string"`
	SequenceNumber   int64  `json:"sequence_number"`
	// Groups is the number of file groups; DoneGroups the ones settled done.
	Groups     int   `json:"groups"`
	DoneGroups []int `json:"done_groups"`
	// Expected totals from the plan.
	InputFiles int64 `json:"input_files"`
	InputBytes int64 `json:"input_bytes"`
	InputRows  int64 `json:"input_rows"`
	// PlanKey is the S3 key of the plan object.
	PlanKey string `json:"plan_key"`
	// PlanMillis is how long planning took up to the job record.
	PlanMillis int64 `json:"plan_ms"`
	// TargetFileSize is the output file size the planner chose.
	TargetFileSize int64 `json:"target_file_size"`
	// DeferredGroups and DeferredBytes are what the planner left of the
	// compaction for later jobs (ICEKEEPER_MAX_JOB_FILES, a sort's budget).
	// With Continues (only the file cap left them), once this job commits
	// the committer lets the next one be planned at once (package commit,
	// continueCompaction).
	DeferredGroups int   `json:"deferred_groups,omitempty"`
	DeferredBytes  int64 `json:"deferred_bytes,omitempty"`
	Continues      bool  `json:"continues,omitempty"`
	// Throttle says why package throttle bounded the compaction's groups
	// (a busy table's job takes at most one wave); empty when it did not.
	Throttle string `json:"throttle,omitempty"`
	// CommittedSnapshotID is set once the job is committed.
	CommittedSnapshotID int64 `json:"committed_snapshot_id,string,omitempty"`
	// DeletionsLeft: a committed expiry or orphan cleanup ended before it
	// deleted every file of its deletions record (its lease was lost, or its
	// deletions could not finish within it). The record stays; the table's
	// next expiry finishes it (package commit, leftovers.go), and until then
	// the job stays among the lease's past jobs.
	DeletionsLeft bool `json:"deletions_left,omitempty"`
	// CommitterID owns the committing state.
	CommitterID string `json:"committer_id,omitempty"`
	// BatchSize is the number of groups per commit of a batched job
	// (partial progress, batches.go); 0: one commit for the whole job.
	BatchSize int `json:"batch_size,omitempty"`
	// CommittingBatch is the batch being committed (a batched job in the
	// committing state).
	CommittingBatch int `json:"committing_batch,omitempty"`
	// CommittedBatches maps each committed batch to its snapshot;
	// FailedBatches each failed batch to why.
	CommittedBatches map[int]int64  `json:"committed_batches,omitempty"`
	FailedBatches    map[int]string `json:"failed_batches,omitempty"`
	CreatedAt        time.Time      `json:"created_at"`
	UpdatedAt        time.Time      `json:"updated_at"`
}

// Pin is the snapshot the job is pinned to.
func (j Job) Pin() messages.Pin {
	return messages.Pin{MetadataLocation: j.MetadataLocation, SnapshotID: j.SnapshotID, SequenceNumber: j.SequenceNumber}
}

// Kind is what a job does.
type Kind string

// Kinds. Records written before kinds existed are compactions.
const (
	// KindCompaction rewrites data files (bin-pack, sort, z-order).
	KindCompaction Kind = "compaction"
	// KindExpire expires snapshots and deletes what they alone used
	// (package expire).
	KindExpire Kind = "expire"
	// KindRewriteManifests rewrites the current snapshot's manifests.
	KindRewriteManifests Kind = "rewrite-manifests"
	// KindRemoveOrphans deletes files under the table's location that no
	// metadata reaches (package orphans).
	KindRemoveOrphans Kind = "remove-orphans"
	// KindRewriteDeletes rewrites a partition's delete files into fewer
	// (package plan, PlanDeleteRewrite).
	KindRewriteDeletes Kind = "rewrite-deletes"
	// KindChangeLayout changes a table's layout (its sort order, or its
	// z-order columns) to what its query signals recommend, for an owner
	// who set icekeeper.layout.auto (package plan, PlanLayoutChange).
	KindChangeLayout Kind = "change-layout"
)

// Group is the record of one file group.
type Group struct {
	JobID         string
	Index         int
	State         GroupState
	Reason        string
	Winner        string
	DescriptorKey string
	Attempts      []string
	InputFiles    int64
	InputBytes    int64
	RowsWritten   int64
}

// Store reads and writes job records in one DynamoDB table with string
// partition key "job_id" and string sort key "item_key".
type Store struct {
	db        DynamoDB
	tableName string
	now       func() time.Time
}

// NewStore validates its arguments and returns a Store.
func NewStore(db DynamoDB, tableName string, now func() time.Time) (*Store, error) {
	if db == nil {
		return nil, errors.New("jobs: nil DynamoDB client")
	}
	if tableName == "" {
		return nil, errors.New("jobs: empty table name (set ICEKEEPER_JOBS_TABLE)")
	}
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, tableName: tableName, now: now}, nil
}

const jobItem = "job"

func groupItem(i int) string { return fmt.Sprintf("group#%05d", i) }

func key(jobID, item string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"job_id":   &types.AttributeValueMemberS{Value: jobID},
		"item_key": &types.AttributeValueMemberS{Value: item},
	}
}

// Create writes a new job (state Planned) and its pending groups. It fails
// with ErrStateConflict if the job id already exists.
func (s *Store) Create(ctx context.Context, j Job, groups []Group) error {
	if len(groups) > MaxGroups {
		return fmt.Errorf("jobs: create %s: %d groups, at most %d fit the job item (MaxGroups)", j.ID, len(groups), MaxGroups)
	}
	now := s.now()
	j.State = Planned
	j.CreatedAt, j.UpdatedAt = now, now
	j.Groups = len(groups)
	item := encodeJob(j)
	// Job and group items expire (DynamoDB TTL on purge_at, Unix seconds)
	// long after any job can still run.
	purge := &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(RecordRetention).Unix(), 10)}
	item[PurgeAttribute] = purge
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.tableName),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(job_id)"),
	})
	if err != nil && !(isConditionFailed(err) && s.createdBy(ctx, j, now)) {
		if isConditionFailed(err) {
			return fmt.Errorf("%w: job %s already exists", ErrStateConflict, j.ID)
		}
		return fmt.Errorf("jobs: create %s: %w", j.ID, err)
	}
	for _, g := range groups {
		g.JobID = j.ID
		g.State = GroupPending
		gi := encodeGroup(g)
		gi[PurgeAttribute] = purge
		if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.tableName),
			Item:      gi,
		}); err != nil {
			return fmt.Errorf("jobs: create group %d of %s: %w", g.Index, j.ID, err)
		}
	}
	return nil
}

// RecordRetention is how long job and group records are kept (DynamoDB
// TTL on PurgeAttribute): far longer than any job runs, long enough for
// the next job on the table to clean up after it (plan.cleanUpAfter).
const RecordRetention = 90 * 24 * time.Hour

// createdBy reports whether the job item that made Create's condition
// fail is the one this Create wrote: the SDK sends a request again when
// the connection broke under its response (it retries a closed
// connection: aws-sdk-go-v2 issues 1825 and 2737, PR 2949), so the put
// may be the second try of one that succeeded. Its lease token, plan and
// creation time (to the millisecond) are this Create's.
func (s *Store) createdBy(ctx context.Context, j Job, now time.Time) bool {
	cur, err := s.Get(ctx, j.ID)
	return err == nil && cur.Token == j.Token && cur.PlanKey == j.PlanKey && cur.CreatedAt.UnixMilli() == now.UnixMilli()
}

// PurgeAttribute is the jobs table's TTL attribute.
const PurgeAttribute = "purge_at"

// Get reads a job with a consistent read.
func (s *Store) Get(ctx context.Context, id string) (Job, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tableName), Key: key(id, jobItem), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Job{}, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return Job{}, fmt.Errorf("%w: job %s", ErrNotFound, id)
	}
	return decodeJob(out.Item), nil
}

// Group reads one group with a consistent read.
func (s *Store) Group(ctx context.Context, id string, index int) (Group, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tableName), Key: key(id, groupItem(index)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Group{}, fmt.Errorf("jobs: get group %d of %s: %w", index, id, err)
	}
	if len(out.Item) == 0 {
		return Group{}, fmt.Errorf("%w: group %d of job %s", ErrNotFound, index, id)
	}
	return decodeGroup(out.Item), nil
}

// Groups reads every group of a job, ordered by index.
func (s *Store) Groups(ctx context.Context, id string) ([]Group, error) {
	var groups []Group
	var start map[string]types.AttributeValue
	for {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(s.tableName),
			KeyConditionExpression: aws.String("job_id = :id AND begins_with(item_key, :g)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":id": &types.AttributeValueMemberS{Value: id},
				":g":  &types.AttributeValueMemberS{Value: "group#"},
			},
			ConsistentRead:    aws.Bool(true),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("jobs: list groups of %s: %w", id, err)
		}
		for _, it := range out.Items {
			groups = append(groups, decodeGroup(it))
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	sort.Slice(groups, func(a, b int) bool { return groups[a].Index < groups[b].Index })
	return groups, nil
}

// Transition moves a job from one of the from states to to, recording
// reason. It returns ErrStateConflict when the job is in none of them.
func (s *Store) Transition(ctx context.Context, id string, from []State, to State, reason string) error {
	if len(from) == 0 {
		return fmt.Errorf("jobs: transition %s to %s: no from states", id, to)
	}
	for _, f := range from {
		if f == Committing || to == Committing {
			return fmt.Errorf("jobs: transition %s: the committing state changes only through BeginCommit, TakeOver, EndCommitting and MarkCommitted", id)
		}
	}
	vals := map[string]types.AttributeValue{
		":to":     str(string(to)),
		":reason": str(boundReason(reason)),
		":now":    num(s.now().UnixMilli()),
	}
	cond := ""
	for i, f := range from {
		k := ":from" + strconv.Itoa(i)
		vals[k] = str(string(f))
		if i > 0 {
			cond += " OR "
		}
		cond += "job_state = " + k
	}
	return s.updateJob(ctx, id, "SET job_state = :to, job_reason = :reason, updated_at = :now", "attribute_exists(job_id) AND ("+cond+")", vals,
		func() error {
			return fmt.Errorf("%w: job %s to %s (expected one of %v)", ErrStateConflict, id, to, from)
		},
		func(err error) error { return fmt.Errorf("jobs: transition %s to %s: %w", id, to, err) })
}

// BeginCommit moves a job from one of the from states to committing, owned
// by committer. It returns ErrStateConflict when the job is in none of them.
func (s *Store) BeginCommit(ctx context.Context, id string, from []State, committer string) error {
	return s.setCommitting(ctx, id, committer, "job_state = :planned OR job_state = :running", from, time.Time{})
}

// TakeOver gives a committing job that nobody touched since staleBefore to
// committer. It returns ErrStateConflict when the job is not committing or
// its owner touched it since.
func (s *Store) TakeOver(ctx context.Context, id, committer string, staleBefore time.Time) error {
	return s.setCommitting(ctx, id, committer, "job_state = :committing AND updated_at < :stale", nil, staleBefore)
}

func (s *Store) setCommitting(ctx context.Context, id, committer, cond string, from []State, staleBefore time.Time) error {
	vals := map[string]types.AttributeValue{
		":committing": str(string(Committing)), ":c": str(committer), ":now": num(s.now().UnixMilli()),
	}
	if from != nil {
		vals[":planned"], vals[":running"] = str("-"), str("-")
		for _, f := range from {
			switch f {
			case Planned:
				vals[":planned"] = str(string(Planned))
			case Running:
				vals[":running"] = str(string(Running))
			default:
				return fmt.Errorf("jobs: begin commit of %s from %s: only planned or running", id, f)
			}
		}
	} else {
		vals[":stale"] = num(staleBefore.UnixMilli())
	}
	return s.updateJob(ctx, id, "SET job_state = :committing, committer_id = :c, updated_at = :now", "attribute_exists(job_id) AND ("+cond+")", vals,
		func() error {
			return fmt.Errorf("%w: job %s cannot become committing for %s", ErrStateConflict, id, committer)
		},
		func(err error) error { return fmt.Errorf("jobs: committing %s: %w", id, err) })
}

// Heartbeat refreshes a committing job's updated_at for its owner; it
// returns ErrStateConflict when committer no longer owns the job.
func (s *Store) Heartbeat(ctx context.Context, id, committer string) error {
	return s.updateJob(ctx, id, "SET updated_at = :now", "job_state = :committing AND committer_id = :c", map[string]types.AttributeValue{
		":committing": str(string(Committing)), ":c": str(committer), ":now": num(s.now().UnixMilli()),
	},
		func() error {
			return fmt.Errorf("%w: job %s is no longer committing for %s", ErrStateConflict, id, committer)
		},
		func(err error) error { return fmt.Errorf("jobs: heartbeat %s: %w", id, err) })
}

// EndCommitting ends a committing job without a commit (to failed or
// aborted, or to committed for a batched job whose earlier batches
// committed), only for its owner.
func (s *Store) EndCommitting(ctx context.Context, id, committer string, to State, reason string) error {
	if !to.Terminal() {
		return fmt.Errorf("jobs: end committing %s: %s is not terminal", id, to)
	}
	return s.updateJob(ctx, id, "SET job_state = :to, job_reason = :reason, updated_at = :now", "job_state = :committing AND committer_id = :c", map[string]types.AttributeValue{
		":committing": str(string(Committing)), ":c": str(committer), ":to": str(string(to)),
		":reason": str(boundReason(reason)), ":now": num(s.now().UnixMilli()),
	},
		func() error {
			return fmt.Errorf("%w: job %s is not committing for %s", ErrStateConflict, id, committer)
		},
		func(err error) error { return fmt.Errorf("jobs: end committing %s: %w", id, err) })
}

// MarkCommitted moves a committing job to committed and records the
// snapshot it committed.
func (s *Store) MarkCommitted(ctx context.Context, id string, snapshotID int64, reason string) error {
	return s.updateJob(ctx, id, "SET job_state = :to, job_reason = :reason, committed_snapshot = :snap, updated_at = :now", "job_state = :from", map[string]types.AttributeValue{
		":to": str(string(Committed)), ":from": str(string(Committing)),
		":reason": str(boundReason(reason)), ":snap": num(snapshotID), ":now": num(s.now().UnixMilli()),
	},
		func() error { return fmt.Errorf("%w: job %s is not committing", ErrStateConflict, id) },
		func(err error) error { return fmt.Errorf("jobs: mark %s committed: %w", id, err) })
}

// MarkCommittedLeavingDeletions moves a committing job to committed with
// DeletionsLeft set: its catalog commit landed but some of the files it
// frees are not deleted yet (Job.DeletionsLeft). Like MarkCommitted it
// needs only the committing state: a committer that lost the lease may
// still end its own job, and must, so that the job pins nothing.
func (s *Store) MarkCommittedLeavingDeletions(ctx context.Context, id string, snapshotID int64, reason string) error {
	return s.updateJob(ctx, id, "SET job_state = :to, job_reason = :reason, committed_snapshot = :snap, deletions_left = :left, updated_at = :now", "job_state = :from", map[string]types.AttributeValue{
		":to": str(string(Committed)), ":from": str(string(Committing)), ":left": &types.AttributeValueMemberBOOL{Value: true},
		":reason": str(boundReason(reason)), ":snap": num(snapshotID), ":now": num(s.now().UnixMilli()),
	},
		func() error { return fmt.Errorf("%w: job %s is not committing", ErrStateConflict, id) },
		func(err error) error { return fmt.Errorf("jobs: mark %s committed with deletions left: %w", id, err) })
}

// ClearDeletionsLeft records that a committed job's leftover deletions are
// done (Job.DeletionsLeft false); the job may then be forgotten.
func (s *Store) ClearDeletionsLeft(ctx context.Context, id string) error {
	return s.updateJob(ctx, id, "REMOVE deletions_left SET updated_at = :now", "job_state = :committed", map[string]types.AttributeValue{
		":committed": str(string(Committed)), ":now": num(s.now().UnixMilli()),
	},
		func() error { return fmt.Errorf("%w: job %s is not committed", ErrStateConflict, id) },
		func(err error) error { return fmt.Errorf("jobs: clear deletions left of %s: %w", id, err) })
}

// claimable is the job-item condition of RegisterAttempt and Claim: the
// job is planned or running under the task's lease token, or it is a
// batched job committing one of its batches (batches.go): a claim then
// settles a group of another batch, since every group of the committing
// batch is settled already.
const claimable = "(job_state = :planned OR job_state = :running OR (job_state = :committing AND batch_size > :zero)) AND lease_token = :tok"

// Claimable reports whether the job accepts attempts and claims (claimable).
func (j Job) Claimable() bool {
	return j.State == Planned || j.State == Running || (j.State == Committing && j.BatchSize > 0)
}

// RegisterAttempt records that attempt is about to write files for group, so
// that its files can be found and removed if it loses or crashes. It fails
// with ErrNotRunning when the job is no longer planned or running under
// token, and ErrGroupSettled when the group is already done or failed.
func (s *Store) RegisterAttempt(ctx context.Context, jobID string, token int64, group int, attempt string) error {
	return retryConflicts(ctx, func() error { return s.registerAttempt(ctx, jobID, token, group, attempt) })
}

func (s *Store) registerAttempt(ctx context.Context, jobID string, token int64, group int, attempt string) error {
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{
				TableName:           aws.String(s.tableName),
				Key:                 key(jobID, jobItem),
				ConditionExpression: aws.String(claimable),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":planned": str(string(Planned)), ":running": str(string(Running)), ":tok": num(token),
					":committing": str(string(Committing)), ":zero": num(0),
				},
			}},
			{Update: &types.Update{
				TableName:           aws.String(s.tableName),
				Key:                 key(jobID, groupItem(group)),
				UpdateExpression:    aws.String("ADD attempt_ids :a"),
				ConditionExpression: aws.String("group_state = :pending"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":a": &types.AttributeValueMemberSS{Value: []string{attempt}}, ":pending": str(string(GroupPending)),
				},
			}},
		},
	})
	if err != nil {
		return s.explainTxnFailure(ctx, err, jobID, token, group, "register attempt", "")
	}
	return nil
}

// Claim settles group as done with attempt as its winner, pointing at the
// attempt's descriptor, and adds the group to the job's done set, in one
// transaction. It fails with ErrGroupSettled when another attempt won (or
// the group failed) and ErrNotRunning when the job moved on.
func (s *Store) Claim(ctx context.Context, jobID string, token int64, group int, attempt, descriptorKey string, rowsWritten int64) error {
	return retryConflicts(ctx, func() error { return s.claim(ctx, jobID, token, group, attempt, descriptorKey, rowsWritten) })
}

func (s *Store) claim(ctx context.Context, jobID string, token int64, group int, attempt, descriptorKey string, rowsWritten int64) error {
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{
				TableName:           aws.String(s.tableName),
				Key:                 key(jobID, jobItem),
				UpdateExpression:    aws.String("ADD done_groups :g SET updated_at = :now"),
				ConditionExpression: aws.String(claimable),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":g":       &types.AttributeValueMemberNS{Value: []string{strconv.Itoa(group)}},
					":planned": str(string(Planned)), ":running": str(string(Running)), ":tok": num(token),
					":committing": str(string(Committing)), ":zero": num(0),
					":now": num(s.now().UnixMilli()),
				},
			}},
			{Update: &types.Update{
				TableName:           aws.String(s.tableName),
				Key:                 key(jobID, groupItem(group)),
				UpdateExpression:    aws.String("SET group_state = :done, winner_id = :a, descriptor_key = :d, rows_written = :rows"),
				ConditionExpression: aws.String("group_state = :pending"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":done": str(string(GroupDone)), ":pending": str(string(GroupPending)),
					":a": str(attempt), ":d": str(descriptorKey), ":rows": num(rowsWritten),
				},
			}},
		},
	})
	if err != nil {
		return s.explainTxnFailure(ctx, err, jobID, token, group, "claim", attempt)
	}
	return nil
}

// FailGroup settles a pending group as failed with reason. A group that is
// already settled is left as it is (ErrGroupSettled).
func (s *Store) FailGroup(ctx context.Context, jobID string, group int, reason string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.tableName),
		Key:                 key(jobID, groupItem(group)),
		UpdateExpression:    aws.String("SET group_state = :failed, group_reason = :r"),
		ConditionExpression: aws.String("group_state = :pending"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":failed": str(string(GroupFailed)), ":pending": str(string(GroupPending)), ":r": str(boundReason(reason)),
		},
	})
	if err != nil {
		if isConditionFailed(err) {
			return fmt.Errorf("%w: group %d of %s", ErrGroupSettled, group, jobID)
		}
		return fmt.Errorf("jobs: fail group %d of %s: %w", group, jobID, err)
	}
	return nil
}

// explainTxnFailure turns a cancelled transaction into the sentinel that
// names the condition that failed, by reading both items back. For a
// claim (winner not empty), a group already won by that same attempt is
// no failure: an earlier try of the same claim landed (the SDK or
// retryConflicts sent it again after a lost response), and reporting it
// lost would make the winner delete its own files.
func (s *Store) explainTxnFailure(ctx context.Context, err error, jobID string, token int64, group int, what, winner string) error {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) && !isConditionFailed(err) {
		return fmt.Errorf("jobs: %s group %d of %s: %w", what, group, jobID, err)
	}
	if winner != "" {
		g, gerr := s.Group(ctx, jobID, group)
		if gerr != nil {
			return gerr
		}
		if g.State == GroupDone && g.Winner == winner {
			return nil
		}
	}
	j, gerr := s.Get(ctx, jobID)
	if gerr != nil {
		return gerr
	}
	if !j.Claimable() || j.Token != token {
		return fmt.Errorf("%w: job %s is %s (token %d, task token %d)", ErrNotRunning, jobID, j.State, j.Token, token)
	}
	g, gerr := s.Group(ctx, jobID, group)
	if gerr != nil {
		return gerr
	}
	if g.State != GroupPending {
		return fmt.Errorf("%w: group %d of %s is %s (winner %s)", ErrGroupSettled, group, jobID, g.State, g.Winner)
	}
	return fmt.Errorf("%w: %s group %d of %s: %w", errTxnConflict, what, group, jobID, err)
}

// errTxnConflict: a transaction was cancelled although both of its
// conditions still hold (DynamoDB's TransactionConflict, when two
// transactions touch the job item at once). It is safe to run again.
var errTxnConflict = errors.New("jobs: transaction conflict")

// retryConflicts runs a transaction again, a few times with a short
// jittered backoff, while it is cancelled only by conflicts with other
// transactions (two rewriters claiming at once), so that a transient
// conflict does not throw away a rewrite.
func retryConflicts(ctx context.Context, run func() error) error {
	var err error
	for i := 0; i < 6; i++ {
		if err = run(); !errors.Is(err, errTxnConflict) {
			return err
		}
		d := time.Duration(10<<i)*time.Millisecond + time.Duration(rand.Int64N(int64(10*time.Millisecond)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	return err
}

// updateJob makes one conditional update of a job item. A failed
// condition becomes conflict(); any other error other(err).
//
// Each update also writes an id of its own (write_id). The SDK sends a
// request again when the connection broke under its response (it
// retries a closed connection: aws-sdk-go-v2 issues 1825 and 2737, PR
// 2949), and the second try of an update that took effect fails its
// condition on the first try's own change (a job moved to committing is
// no longer running): when a consistent read finds this update's id
// still the item's latest, the update is done, not in conflict. Any
// later write replaces the id, so an update another write followed is
// reported as a conflict, as before.
func (s *Store) updateJob(ctx context.Context, id, update, cond string, vals map[string]types.AttributeValue, conflict func() error, other func(error) error) error {
	wid := strconv.FormatUint(rand.Uint64(), 36)
	vals[":wid"] = str(wid)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tableName),
		Key:                       key(id, jobItem),
		UpdateExpression:          aws.String(withWriteID(update)),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals,
	})
	if err != nil {
		if isConditionFailed(err) {
			if s.lastWriteWas(ctx, id, wid) {
				return nil
			}
			return conflict()
		}
		return other(err)
	}
	return nil
}

// withWriteID adds write_id = :wid to update's SET clause (every job
// update has one; an update expression holds one clause of each kind).
func withWriteID(update string) string {
	if i := strings.Index(update, "SET "); i >= 0 {
		return update[:i] + "SET write_id = :wid, " + update[i+len("SET "):]
	}
	return update + " SET write_id = :wid"
}

// lastWriteWas reports whether the job item's latest update is the one
// with write id wid (a consistent read; false when it cannot be read).
func (s *Store) lastWriteWas(ctx context.Context, id, wid string) bool {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tableName), Key: key(id, jobItem), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false
	}
	v, ok := out.Item["write_id"].(*types.AttributeValueMemberS)
	return ok && v.Value == wid
}

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return true
	}
	var tce *types.TransactionCanceledException
	return errors.As(err, &tce)
}

func encodeJob(j Job) map[string]types.AttributeValue {
	it := key(j.ID, jobItem)
	it["table_id"] = str(j.Table)
	it["job_state"] = str(string(j.State))
	it["job_kind"] = str(string(j.Kind))
	it["job_reason"] = str(boundReason(j.Reason))
	it["job_trigger"] = str(j.Trigger)
	it["lease_token"] = num(j.Token)
	it["pin_metadata"] = str(j.MetadataLocation)
	it["pin_snapshot"] = num(j.SnapshotID)
	it["pin_sequence"] = num(j.SequenceNumber)
	it["group_count"] = num(int64(j.Groups))
	it["input_files"] = num(j.InputFiles)
	it["input_bytes"] = num(j.InputBytes)
	it["input_rows"] = num(j.InputRows)
	it["plan_key"] = str(j.PlanKey)
	it["plan_ms"] = num(j.PlanMillis)
	it["target_file_size"] = num(j.TargetFileSize)
	if j.BatchSize > 0 {
		it["batch_size"] = num(int64(j.BatchSize))
	}
	if j.DeferredGroups > 0 {
		it["deferred_groups"] = num(int64(j.DeferredGroups))
		it["deferred_bytes"] = num(j.DeferredBytes)
		it["continues"] = &types.AttributeValueMemberBOOL{Value: j.Continues}
	}
	if j.Throttle != "" {
		it["throttle"] = str(boundReason(j.Throttle))
	}
	it["created_at"] = num(j.CreatedAt.UnixMilli())
	it["updated_at"] = num(j.UpdatedAt.UnixMilli())
	return it
}

func decodeJob(it map[string]types.AttributeValue) Job {
	j := Job{
		ID:                  getS(it, "job_id"),
		Table:               getS(it, "table_id"),
		Kind:                Kind(getS(it, "job_kind")),
		State:               State(getS(it, "job_state")),
		Reason:              getS(it, "job_reason"),
		Trigger:             getS(it, "job_trigger"),
		Token:               getN(it, "lease_token"),
		MetadataLocation:    getS(it, "pin_metadata"),
		SnapshotID:          getN(it, "pin_snapshot"),
		SequenceNumber:      getN(it, "pin_sequence"),
		Groups:              int(getN(it, "group_count")),
		InputFiles:          getN(it, "input_files"),
		InputBytes:          getN(it, "input_bytes"),
		InputRows:           getN(it, "input_rows"),
		PlanKey:             getS(it, "plan_key"),
		PlanMillis:          getN(it, "plan_ms"),
		TargetFileSize:      getN(it, "target_file_size"),
		DeferredGroups:      int(getN(it, "deferred_groups")),
		DeferredBytes:       getN(it, "deferred_bytes"),
		Continues:           getBool(it, "continues"),
		Throttle:            getS(it, "throttle"),
		DeletionsLeft:       getBool(it, "deletions_left"),
		CommittedSnapshotID: getN(it, "committed_snapshot"),
		CommitterID:         getS(it, "committer_id"),
		CreatedAt:           time.UnixMilli(getN(it, "created_at")),
		UpdatedAt:           time.UnixMilli(getN(it, "updated_at")),
	}
	if j.Kind == "" {
		j.Kind = KindCompaction
	}
	decodeBatches(it, &j)
	if ns, ok := it["done_groups"].(*types.AttributeValueMemberNS); ok {
		for _, v := range ns.Value {
			if n, err := strconv.Atoi(v); err == nil {
				j.DoneGroups = append(j.DoneGroups, n)
			}
		}
		sort.Ints(j.DoneGroups)
	}
	return j
}

func encodeGroup(g Group) map[string]types.AttributeValue {
	it := key(g.JobID, groupItem(g.Index))
	it["group_index"] = num(int64(g.Index))
	it["group_state"] = str(string(g.State))
	it["input_files"] = num(g.InputFiles)
	it["input_bytes"] = num(g.InputBytes)
	return it
}

func decodeGroup(it map[string]types.AttributeValue) Group {
	g := Group{
		JobID:         getS(it, "job_id"),
		Index:         int(getN(it, "group_index")),
		State:         GroupState(getS(it, "group_state")),
		Reason:        getS(it, "group_reason"),
		Winner:        getS(it, "winner_id"),
		DescriptorKey: getS(it, "descriptor_key"),
		InputFiles:    getN(it, "input_files"),
		InputBytes:    getN(it, "input_bytes"),
		RowsWritten:   getN(it, "rows_written"),
	}
	if ss, ok := it["attempt_ids"].(*types.AttributeValueMemberSS); ok {
		g.Attempts = append(g.Attempts, ss.Value...)
		sort.Strings(g.Attempts)
	}
	return g
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// MaxReasonBytes bounds every reason a job or group record keeps (a
// state's reason, a failed group's or batch's): reasons are error texts,
// which can be long (a wrapped error naming many files), and a job item
// holds one per failed batch next to its own. With at most
// optin.MaxPartialProgressCommits batches, the item stays far below
// DynamoDB's 400 KB item limit ("The maximum item size in DynamoDB is 400
// KB": Amazon DynamoDB Developer Guide, "Quotas in Amazon DynamoDB",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
const MaxReasonBytes = 1024

// MaxGroups caps a job's file groups. The job item keeps the groups
// settled done as a number set (done_groups) inside DynamoDB's 400 KB item
// limit (the same quota page): 10,000 group indexes of at most 4 digits
// are about 40 KB (a number costs about one byte per two digits, plus
// one; "Item sizes and formats", DynamoDB Developer Guide), while the
// 100,000 one-file groups ICEKEEPER_MAX_JOB_FILES alone allows would be
// about 390 KB. Planners leave the groups past it for the next job; Create
// refuses more.
const MaxGroups = 10_000

// boundReason bounds r to MaxReasonBytes, cut on a UTF-8 boundary and marked.
func boundReason(r string) string {
	if len(r) <= MaxReasonBytes {
		return r
	}
	const mark = " [cut]"
	cut := MaxReasonBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(r[cut]) {
		cut--
	}
	return r[:cut] + mark
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func getS(it map[string]types.AttributeValue, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it map[string]types.AttributeValue, k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getBool(it map[string]types.AttributeValue, k string) bool {
	v, ok := it[k].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}
