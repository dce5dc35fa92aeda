package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CooldownStore keeps each table's next allowed planning time in the lease
// table (attribute next_plan_at on the item keyed by table_id, the lease's
// item), with conditional writes so that every planner agrees: of all the
// triggers that arrive for one table within its cooldown, exactly one claims
// the slot. The planner claims slots (package trigger); the committer
// reopens a table's slot when a compaction it committed left groups for a
// next job (package commit).
type CooldownStore struct {
	db        cooldownDB
	tableName string
}

// NewCooldownStore validates its arguments and returns a store.
func NewCooldownStore(db cooldownDB, leaseTable string) (*CooldownStore, error) {
	if db == nil || leaseTable == "" {
		return nil, errors.New("lease: cooldown store needs a DynamoDB client and the lease table (ICEKEEPER_LEASE_TABLE)")
	}
	return &CooldownStore{db: db, tableName: leaseTable}, nil
}

// Slot is what a Claim found of a table's planning slot.
type Slot struct {
	// Claimed: this claim took the slot.
	Claimed bool
	// Ends is when the slot held by another claim may next be claimed
	// (its next_plan_at); zero when Claimed, or when the item holds none.
	Ends time.Time
}

// Claim takes the table's planning slot at now when its cooldown has passed
// and sets the next one at now+interval. When the table is still cooling
// down it reports the slot not claimed, without error, and when it ends.
//
// Each claim writes an id of its own (claim_id): when the condition fails,
// a consistent read tells a slot another claim took from this claim's own
// first try, which the SDK sends again when the connection broke under its
// response (lease.ownTermOrHeld says why); that slot is this claim's.
func (s *CooldownStore) Claim(ctx context.Context, table string, now time.Time, interval time.Duration) (Slot, error) {
	id := strconv.FormatUint(rand.Uint64(), 36)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.tableName),
		Key:                 map[string]types.AttributeValue{"table_id": &types.AttributeValueMemberS{Value: table}},
		UpdateExpression:    aws.String("SET next_plan_at = :next, last_trigger_at = :now, claim_id = :claim"),
		ConditionExpression: aws.String("attribute_not_exists(next_plan_at) OR next_plan_at <= :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":next":  num(now.Add(interval).UnixMilli()),
			":now":   num(now.UnixMilli()),
			":claim": &types.AttributeValueMemberS{Value: id},
		},
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return Slot{}, fmt.Errorf("lease: claim cooldown of %s: %w", table, err)
		}
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(s.tableName),
			Key:            map[string]types.AttributeValue{"table_id": &types.AttributeValueMemberS{Value: table}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return Slot{}, fmt.Errorf("lease: claim cooldown of %s: the condition failed, and reading whose slot it is failed: %w", table, err)
		}
		if v, ok := out.Item["claim_id"].(*types.AttributeValueMemberS); ok && v.Value == id {
			return Slot{Claimed: true}, nil
		}
		slot := Slot{}
		if v, ok := out.Item["next_plan_at"].(*types.AttributeValueMemberN); ok {
			if ms, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
				slot.Ends = time.UnixMilli(ms)
			}
		}
		return slot, nil
	}
	return Slot{Claimed: true}, nil
}

// SetNext moves the table's next allowed planning time: later, after the
// table's own icekeeper.compaction.min-interval was read; to now, to give a
// slot back or to let a compaction's next job be planned at once.
func (s *CooldownStore) SetNext(ctx context.Context, table string, next time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tableName),
		Key:                       map[string]types.AttributeValue{"table_id": &types.AttributeValueMemberS{Value: table}},
		UpdateExpression:          aws.String("SET next_plan_at = :next"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":next": num(next.UnixMilli())},
	})
	if err != nil {
		return fmt.Errorf("lease: set cooldown of %s: %w", table, err)
	}
	return nil
}

// cooldownDB is the subset of the DynamoDB client the cooldown store needs.
type cooldownDB interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}
