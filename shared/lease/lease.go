// Package lease implements the per-table maintenance lease in DynamoDB.
//
// A lease is a term: an owner (the job id) plus a fencing token that only
// grows. Acquire is a single conditional write that succeeds only when no
// owner holds an unexpired lease; it increments the token, so every new term
// has a token larger than every earlier one for the same table. Renew and
// Release are conditional on that exact term (owner and token), so a holder
// whose lease has expired and been taken over can never extend or release the
// new holder's term.
//
// Invariants:
//   - At most one unexpired owner per table at any time (DynamoDB conditional
//     write on the single item keyed by table).
//   - Tokens never decrease while the item exists. Release keeps the token.
//     The item carries a purge_at attribute (for DynamoDB TTL) set well past
//     the expiry, so idle tables' items are eventually removed; when that
//     happens tokens restart, which is why readers also compare the owner.
//   - Expiry only lets another owner take the table. A term whose expiry
//     passed but that nobody took over is still the current term: its
//     owner may renew it (the renewal is conditional on owner and token,
//     and any takeover increments the token), so a slow job is not thrown
//     away when nobody wanted the table. Once taken over, the old owner's
//     renewals, releases and checks fail (ErrLost).
//   - Acquire reports the owner of an expired term it took over
//     (Lease.Superseded), so the caller can end that owner's job cleanly.
//   - The same item remembers every job that took a term (past_jobs, added
//     by Acquire) until a later job has cleaned up after it (ForgetJobs), so
//     files of crashed attempts and lost jobs are found by the next job on
//     the table (Lease.PastJobs).
//   - The same item remembers how the table's jobs have been failing
//     (RecordFailure, RecordSuccess): a table whose jobs fail the same way
//     twice in a row is backed off for a while (Lease.Backoff, read by
//     Acquire), instead of being hammered by every trigger and sweep.
//   - The same item holds the table's planning cooldown (next_plan_at,
//     CooldownStore): of the triggers that arrive within it, one claims the
//     slot with a conditional write.
package lease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Sentinel errors. ErrHeld and ErrLost are terminal for the caller's current
// attempt (someone else owns the table); other errors are retryable AWS
// failures.
var (
	// ErrHeld means another owner holds an unexpired lease on the table.
	ErrHeld = errors.New("lease: held by another owner")
	// ErrLost means the caller's term is over: expired and taken, or released.
	ErrLost = errors.New("lease: term lost")
)

// DynamoDB is the subset of the DynamoDB client the store needs.
type DynamoDB interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Lease is one term of ownership of a table.
type Lease struct {
	Table     string
	Owner     string
	Token     int64
	ExpiresAt time.Time
	// Superseded is the owner of the expired term this Acquire took over
	// (empty when the previous term was released or there was none).
	Superseded string
	// Backoff is the table's failure record as Acquire found it.
	Backoff Backoff
	// PastJobs are the earlier jobs on the table not yet cleaned up after
	// (as Acquire found them; this term's owner is not among them).
	PastJobs []string
}

// Backoff is how a table's jobs have been failing: the kind of the last
// failure, how many jobs in a row failed that way, and until when the table
// is left alone.
type Backoff struct {
	Class  string    `json:"class,omitempty"`
	Streak int       `json:"streak,omitempty"`
	Until  time.Time `json:"until,omitempty"`
}

// Active reports whether the table is backed off at now.
func (b Backoff) Active(now time.Time) bool { return now.Before(b.Until) }

// Backoff policy: from the second failure of the same kind in a row, the
// table waits BackoffBase, doubling with each further one, at most
// BackoffMax.
const (
	BackoffBase = time.Hour
	BackoffMax  = 24 * time.Hour
)

// ClassConflict is the failure class of a job aborted by a concurrent
// commit (a writer's delete on a file it rewrote, a removal of one of its
// inputs). Such an abort is not the table's fault, but on a busy table the
// next attempt right away would meet the same writers: from the second in
// a row the table waits ConflictBackoffBase, doubling with each further
// one, at most ConflictBackoffMax.
const (
	ClassConflict       = "conflict"
	ConflictBackoffBase = 5 * time.Minute
	ConflictBackoffMax  = 2 * time.Hour
)

// Store reads and writes leases in one DynamoDB table whose partition key is
// the string attribute "table_id".
type Store struct {
	db         DynamoDB
	tableName  string
	now        func() time.Time
	purgeAfter time.Duration
}

// NewStore validates its arguments and returns a Store. now may be nil
// (time.Now).
func NewStore(db DynamoDB, tableName string, now func() time.Time) (*Store, error) {
	if db == nil {
		return nil, errors.New("lease: nil DynamoDB client")
	}
	if tableName == "" {
		return nil, errors.New("lease: empty table name (set ICEKEEPER_LEASE_TABLE)")
	}
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, tableName: tableName, now: now, purgeAfter: 7 * 24 * time.Hour}, nil
}

func (s *Store) key(table string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"table_id": &types.AttributeValueMemberS{Value: table}}
}

// Acquire starts a new term for owner on table, valid for ttl. It returns
// ErrHeld when another owner holds an unexpired lease.
func (s *Store) Acquire(ctx context.Context, table, owner string, ttl time.Duration) (Lease, error) {
	if owner == "" || ttl <= 0 {
		return Lease{}, fmt.Errorf("lease: acquire %s: owner and a positive ttl are required", table)
	}
	now := s.now()
	exp := now.Add(ttl)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.tableName),
		Key:                 s.key(table),
		UpdateExpression:    aws.String("SET lease_owner = :owner, expires_at = :exp, purge_at = :purge, acquired_at = :now ADD lease_token :one, past_jobs :jobs"),
		ConditionExpression: aws.String("attribute_not_exists(lease_owner) OR expires_at < :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": &types.AttributeValueMemberS{Value: owner},
			":exp":   num(exp.UnixMilli()),
			":purge": num(exp.Add(s.purgeAfter).Unix()),
			":now":   num(now.UnixMilli()),
			":one":   num(1),
			":jobs":  &types.AttributeValueMemberSS{Value: []string{owner}},
		},
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return s.ownTermOrHeld(ctx, table, owner)
		}
		return Lease{}, fmt.Errorf("lease: acquire %s: %w", table, err)
	}
	// The update is atomic, so the new term is exactly the old one plus one.
	old, err := decode(table, out.Attributes)
	if err != nil {
		return Lease{}, err
	}
	return Lease{Table: table, Owner: owner, Token: old.Token + 1, ExpiresAt: time.UnixMilli(exp.UnixMilli()), Superseded: old.Owner, Backoff: old.Backoff, PastJobs: old.PastJobs}, nil
}

// ownTermOrHeld answers an Acquire whose condition failed. The SDK sends
// a request again when the connection broke under its response (it
// retries a closed connection: aws-sdk-go-v2 issues 1825 and 2737, PR
// 2949), so the write that failed may be the second try of one that took
// the term: then the item names this owner, which no other acquirer uses
// (an owner is a job id), and the term is the caller's. What the lost
// response said of the term before (Superseded) is gone: that owner's
// renewals and commit fail on the token all the same, and its files are
// found through PastJobs. Otherwise the table is held.
func (s *Store) ownTermOrHeld(ctx context.Context, table, owner string) (Lease, error) {
	cur, _, err := s.Get(ctx, table)
	if err != nil {
		return Lease{}, fmt.Errorf("lease: acquire %s: the condition failed, and reading whose term it is failed: %w", table, err)
	}
	if cur.Owner != owner {
		return Lease{}, fmt.Errorf("%w: table %s", ErrHeld, table)
	}
	cur.PastJobs = slices.DeleteFunc(cur.PastJobs, func(j string) bool { return j == owner })
	if len(cur.PastJobs) == 0 {
		cur.PastJobs = nil
	}
	return cur, nil
}

// Renew extends the caller's term to now+ttl. It returns ErrLost when the
// term is over: released, or taken over by another owner. A term that
// expired but that nobody took over is renewed.
func (s *Store) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	now := s.now()
	exp := now.Add(ttl)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.tableName),
		Key:                 s.key(l.Table),
		UpdateExpression:    aws.String("SET expires_at = :exp, purge_at = :purge"),
		ConditionExpression: aws.String("lease_owner = :owner AND lease_token = :tok"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": &types.AttributeValueMemberS{Value: l.Owner},
			":tok":   num(l.Token),
			":exp":   num(exp.UnixMilli()),
			":purge": num(exp.Add(s.purgeAfter).Unix()),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return Lease{}, fmt.Errorf("%w: table %s owner %s token %d", ErrLost, l.Table, l.Owner, l.Token)
		}
		return Lease{}, fmt.Errorf("lease: renew %s: %w", l.Table, err)
	}
	return decode(l.Table, out.Attributes)
}

// Release ends the caller's term, keeping the token so the next term's token
// is larger. Releasing a term that is already over returns ErrLost.
func (s *Store) Release(ctx context.Context, l Lease) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.tableName),
		Key:                 s.key(l.Table),
		UpdateExpression:    aws.String("REMOVE lease_owner SET expires_at = :zero"),
		ConditionExpression: aws.String("lease_owner = :owner AND lease_token = :tok"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": &types.AttributeValueMemberS{Value: l.Owner},
			":tok":   num(l.Token),
			":zero":  num(0),
		},
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return fmt.Errorf("%w: table %s owner %s token %d", ErrLost, l.Table, l.Owner, l.Token)
		}
		return fmt.Errorf("lease: release %s: %w", l.Table, err)
	}
	return nil
}

// ForgetJobs removes jobs from the table's past jobs, once their files
// were cleaned up.
func (s *Store) ForgetJobs(ctx context.Context, table string, jobIDs []string) error {
	if len(jobIDs) == 0 {
		return nil
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tableName),
		Key:                       s.key(table),
		UpdateExpression:          aws.String("DELETE past_jobs :jobs"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":jobs": &types.AttributeValueMemberSS{Value: jobIDs}},
	})
	if err != nil {
		return fmt.Errorf("lease: forget past jobs of %s: %w", table, err)
	}
	return nil
}

// RecordFailure records that a job of the table ended without committing,
// for a reason of the given class (a short stable word such as
// "invariant" or "rewrite"). A second failure of the same class in a row
// backs the table off (see BackoffBase, and ClassConflict for aborts by
// concurrent commits); the new record is returned.
func (s *Store) RecordFailure(ctx context.Context, table, class string) (Backoff, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tableName), Key: s.key(table), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Backoff{}, fmt.Errorf("lease: read failures of %s: %w", table, err)
	}
	old, err := decode(table, out.Item)
	if err != nil {
		return Backoff{}, err
	}
	b := Backoff{Class: class, Streak: 1}
	if old.Backoff.Class == class {
		b.Streak = old.Backoff.Streak + 1
	}
	if b.Streak >= 2 {
		base, ceiling := BackoffBase, BackoffMax
		if class == ClassConflict {
			base, ceiling = ConflictBackoffBase, ConflictBackoffMax
		}
		wait := base << min(b.Streak-2, 10)
		b.Until = s.now().Add(min(wait, ceiling))
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.tableName),
		Key:              s.key(table),
		UpdateExpression: aws.String("SET fail_class = :c, fail_streak = :n, backoff_until = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberS{Value: class},
			":n": num(int64(b.Streak)),
			":u": num(b.Until.UnixMilli()),
		},
	})
	if err != nil {
		return Backoff{}, fmt.Errorf("lease: record failure of %s: %w", table, err)
	}
	return b, nil
}

// RecordSuccess clears the table's failure record (a job committed).
func (s *Store) RecordSuccess(ctx context.Context, table string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.tableName),
		Key:              s.key(table),
		UpdateExpression: aws.String("REMOVE fail_class, fail_streak, backoff_until"),
	})
	if err != nil {
		return fmt.Errorf("lease: clear failures of %s: %w", table, err)
	}
	return nil
}

// Get returns the table's current lease. ok is false when nobody holds an
// unexpired lease; the returned Lease still carries the last token.
func (s *Store) Get(ctx context.Context, table string) (l Lease, ok bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tableName),
		Key:            s.key(table),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Lease{}, false, fmt.Errorf("lease: get %s: %w", table, err)
	}
	if len(out.Item) == 0 {
		return Lease{Table: table}, false, nil
	}
	l, err = decode(table, out.Item)
	if err != nil {
		return Lease{}, false, err
	}
	return l, l.Owner != "" && s.now().Before(l.ExpiresAt), nil
}

// Holds reports whether owner's term with token is still the table's
// current term: not released and not taken over (it may have expired, see
// the package comment).
func (s *Store) Holds(ctx context.Context, table, owner string, token int64) (bool, error) {
	l, _, err := s.Get(ctx, table)
	if err != nil {
		return false, err
	}
	return l.Owner == owner && l.Token == token, nil
}

func decode(table string, item map[string]types.AttributeValue) (Lease, error) {
	l := Lease{Table: table}
	if v, ok := item["lease_owner"].(*types.AttributeValueMemberS); ok {
		l.Owner = v.Value
	}
	if v, ok := item["lease_token"].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return Lease{}, fmt.Errorf("lease: %s: bad lease_token %q", table, v.Value)
		}
		l.Token = n
	}
	if v, ok := item["expires_at"].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return Lease{}, fmt.Errorf("lease: %s: bad expires_at %q", table, v.Value)
		}
		l.ExpiresAt = time.UnixMilli(n)
	}
	if v, ok := item["past_jobs"].(*types.AttributeValueMemberSS); ok {
		l.PastJobs = append([]string(nil), v.Value...)
		sort.Strings(l.PastJobs)
	}
	if v, ok := item["fail_class"].(*types.AttributeValueMemberS); ok {
		l.Backoff.Class = v.Value
	}
	if v, ok := item["fail_streak"].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.Atoi(v.Value)
		l.Backoff.Streak = n
	}
	if v, ok := item["backoff_until"].(*types.AttributeValueMemberN); ok {
		if n, err := strconv.ParseInt(v.Value, 10, 64); err == nil && n > 0 {
			l.Backoff.Until = time.UnixMilli(n)
		}
	}
	return l, nil
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
