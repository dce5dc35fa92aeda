package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/signals"
)

// DynamoDB is the part of the DynamoDB API the store uses.
type DynamoDB interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Retention is how long entries are kept (DynamoDB TTL): longer than the
// window Book reads.
const Retention = 90 * 24 * time.Hour

// Store keeps entries in the jobs table (ICEKEEPER_JOBS_TABLE), next to
// the query signals: one item per job, job_id "ledger#<table>", item_key
// "job#<created-at>#<job id>" (sorted by time; the same key when a
// retried committer writes it again), the entry as JSON in "entry".
type Store struct {
	DB        DynamoDB
	TableName string
}

const (
	keyPrefix = "ledger#"
	jobPrefix = "job#"
	stamp     = "20060102T150405.000000000Z"
)

// Put stores the entry of a job on table.
func (s Store) Put(ctx context.Context, table string, e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("ledger: encode %s: %w", e.JobID, err)
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.TableName),
		Item: map[string]types.AttributeValue{
			"job_id":            &types.AttributeValueMemberS{Value: keyPrefix + table},
			"item_key":          &types.AttributeValueMemberS{Value: jobPrefix + e.CreatedAt.UTC().Format(stamp) + "#" + e.JobID},
			"entry":             &types.AttributeValueMemberS{Value: string(b)},
			jobs.PurgeAttribute: &types.AttributeValueMemberN{Value: strconv.FormatInt(e.EndedAt.Add(Retention).Unix(), 10)},
		},
	})
	if err != nil {
		return fmt.Errorf("ledger: write %s's entry for job %s: %w", table, e.JobID, err)
	}
	return nil
}

// Entries reads a table's entries of jobs created since, oldest first.
func (s Store) Entries(ctx context.Context, table string, since time.Time) ([]Entry, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.TableName),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk >= :from"),
		ExpressionAttributeNames: map[string]string{"#pk": "job_id", "#sk": "item_key"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   &types.AttributeValueMemberS{Value: keyPrefix + table},
			":from": &types.AttributeValueMemberS{Value: jobPrefix + since.UTC().Format(stamp)},
		},
	}
	var out []Entry
	for {
		page, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("ledger: read %s's entries: %w", table, err)
		}
		for _, it := range page.Items {
			v, ok := it["entry"].(*types.AttributeValueMemberS)
			if !ok {
				continue
			}
			var e Entry
			if err := json.Unmarshal([]byte(v.Value), &e); err != nil {
				return nil, fmt.Errorf("ledger: %s's entry %v: %w", table, it["item_key"], err)
			}
			out = append(out, e)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// Window is how far back Book reads: the weeks Decide weighs, the week
// in progress, and a spare one for weeks without jobs.
const Window = (WeeksWeighed + 3) * 7 * 24 * time.Hour

// Book reads a table's ledger.
type Book struct {
	Entries Store
	Signals signals.Store
	// Prices: DefaultPrices' where a price is 0.
	Prices Prices
	// BackOff is how long a backed-off table waits after its last job
	// (DefaultBackOff when 0).
	BackOff time.Duration
}

// DefaultBackOff: a backed-off table is compacted at most once a week.
const DefaultBackOff = 7 * 24 * time.Hour

// Assessment is a table's ledger and what it decides.
type Assessment struct {
	Table   string  `json:"table"`
	Prices  Prices  `json:"prices"`
	Weeks   []Week  `json:"weeks"`
	Verdict Verdict `json:"verdict"`
	// LastJobAt is when the table's last weighed job ended, and
	// NextAllowed, when backed off, when the next may start.
	LastJobAt   time.Time `json:"last_job_at,omitzero"`
	NextAllowed time.Time `json:"next_allowed,omitzero"`
	BackOff     string    `json:"back_off_interval"`
}

// Allows reports whether a weighed job may start at now.
func (a Assessment) Allows(now time.Time) bool {
	return !a.Verdict.BackOff || !now.Before(a.NextAllowed)
}

// Assess reads the table's entries and query days of the window and
// weighs them.
func (b Book) Assess(ctx context.Context, table string, now time.Time) (Assessment, error) {
	backoff := b.BackOff
	if backoff <= 0 {
		backoff = DefaultBackOff
	}
	prices, def := b.Prices, DefaultPrices()
	if prices.ScanPerTB <= 0 {
		prices.ScanPerTB = def.ScanPerTB
	}
	if prices.GetUSD <= 0 {
		prices.GetUSD = def.GetUSD
	}
	if prices.GetsPerFile <= 0 {
		prices.GetsPerFile = def.GetsPerFile
	}
	a := Assessment{Table: table, Prices: prices, BackOff: backoff.String()}
	entries, err := b.Entries.Entries(ctx, table, now.Add(-Window))
	if err != nil {
		return a, err
	}
	days, err := b.Signals.Days(ctx, table, now.Add(-Window), now)
	if err != nil {
		return a, err
	}
	a.Weeks = Weeks(entries, days, now, prices)
	a.Verdict = Decide(a.Weeks, len(days) > 0)
	for _, e := range entries {
		if e.EndedAt.After(a.LastJobAt) {
			a.LastJobAt = e.EndedAt
		}
	}
	if a.Verdict.BackOff {
		a.NextAllowed = a.LastJobAt.Add(backoff)
	}
	return a, nil
}
