// Package sentagain stands for the AWS SDK's retry of a write whose
// response was lost: the write reached DynamoDB and took effect, the
// connection broke under the answer, and the SDK sent the same request
// again, whose answer is the one the caller sees. The SDK retries a
// connection closed under a response by default (aws-sdk-go-v2 PR 2949,
// after issues 1825 and 2737), so a conditional write can fail on its own
// first try: the caller must tell that from another writer's.
//
// DynamoDB wraps a client and, while On, sends every PutItem and
// UpdateItem twice and returns the second answer. Transactions are left
// alone: the SDK fills TransactWriteItems' ClientRequestToken, and
// DynamoDB answers a repeated token with the first outcome.
package sentagain

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Client is the part of the DynamoDB client the stores use.
type Client interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// DynamoDB sends writes twice while On.
type DynamoDB struct {
	Client
	On atomic.Bool
	// Repeated counts the writes sent a second time.
	Repeated atomic.Int64
}

// PutItem puts, and while On puts again and answers with the second.
func (d *DynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := d.Client.PutItem(ctx, in, opts...)
	if err != nil || !d.On.Load() {
		return out, err
	}
	d.Repeated.Add(1)
	return d.Client.PutItem(ctx, in, opts...)
}

// UpdateItem updates, and while On updates again and answers with the
// second.
func (d *DynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := d.Client.UpdateItem(ctx, in, opts...)
	if err != nil || !d.On.Load() {
		return out, err
	}
	d.Repeated.Add(1)
	return d.Client.UpdateItem(ctx, in, opts...)
}
