// Package localcloud runs the AWS APIs icekeeper uses in-process, with the
// kumo emulator, and creates the pipeline's resources in it: the descriptor
// bucket, the lease and job tables, and the task and commit queues with
// their dead-letter queues.
//
// It stands in for AWS (or LocalStack) when there is no Docker: the demo,
// `icekeeper compact --local`, `icekeeper local-cloud` and the end-to-end
// tests all use it. The emulator's state is process-global, so resource
// names carry a unique suffix per call.
//
// With ICEKEEPER_SECOND_EMULATOR set to an endpoint (moto's server, which
// `make moto-test` starts), Start uses that emulator instead of kumo, so
// the same tests and assertions run against a second emulator: a second
// opinion on every AWS behaviour they rely on.
package localcloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
)

// Cloud is a running emulator.
type Cloud struct {
	// URL is the emulator's endpoint (AWS_ENDPOINT_URL).
	URL     string
	Clients *awsclients.Clients
	srv     *kumo.Server
	proxy   *http.Server
}

// SecondEmulatorEnv names the endpoint of an emulator already running
// (moto's server) that Start uses instead of starting kumo.
const SecondEmulatorEnv = "ICEKEEPER_SECOND_EMULATOR"

// Start starts the emulator on a free loopback port, or connects to the
// one SecondEmulatorEnv names. Each adjust runs on the clients'
// configuration (see awsclients.ForEndpoint), after PlainRequestBodies.
func Start(adjust ...func(*aws.Config)) *Cloud {
	adjust = append([]func(*aws.Config){PlainRequestBodies}, adjust...)
	if url := os.Getenv(SecondEmulatorEnv); url != "" {
		return &Cloud{URL: url, Clients: awsclients.ForEndpoint(url, "us-east-1", adjust...)}
	}
	srv := kumo.NewServer()
	return &Cloud{URL: srv.URL, Clients: awsclients.ForEndpoint(srv.URL, "us-east-1", adjust...), srv: srv}
}

// Listen starts the emulator and serves it on addr (LocalStack's
// 127.0.0.1:4566 for `icekeeper local-cloud`).
func Listen(addr string) (*Cloud, error) {
	c := Start()
	if c.srv == nil {
		c.Close()
		return nil, fmt.Errorf("localcloud: %s is set: serve that emulator at its own address", SecondEmulatorEnv)
	}
	target, err := url.Parse(c.srv.URL)
	if err != nil {
		c.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("localcloud: listen on %s: %w", addr, err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = s3requests.ProxyTransport()
	c.proxy = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.proxy.Serve(ln) }()
	c.URL = "http://" + ln.Addr().String()
	c.Clients = awsclients.ForEndpoint(c.URL, "us-east-1", PlainRequestBodies)
	return c, nil
}

// Close stops the emulator.
func (c *Cloud) Close() {
	if c.proxy != nil {
		_ = c.proxy.Close()
	}
	if c.srv != nil {
		c.srv.Close()
	}
}

// Resources names what Provision created.
type Resources struct {
	Bucket         string
	LeaseTable     string
	JobsTable      string
	TaskQueueURL   string
	TaskDLQURL     string
	CommitQueueURL string
	CommitDLQURL   string
}

// Apply copies the resource names into cfg.
func (r Resources) Apply(cfg *config.Config) {
	cfg.Bucket, cfg.LeaseTable, cfg.JobsTable = r.Bucket, r.LeaseTable, r.JobsTable
	cfg.TaskQueueURL, cfg.CommitQueueURL = r.TaskQueueURL, r.CommitQueueURL
}

// Provision creates the pipeline's resources, named prefix-<kind>-<suffix>
// (suffix random when empty). maxAttempts is the task queue's
// maxReceiveCount before a message moves to its dead-letter queue.
func (c *Cloud) Provision(ctx context.Context, prefix, suffix string, maxAttempts int) (Resources, error) {
	return Provision(ctx, c.Clients, prefix, suffix, maxAttempts)
}

// Provision creates the pipeline's resources through clients (an emulator
// or LocalStack).
func Provision(ctx context.Context, cl *awsclients.Clients, prefix, suffix string, maxAttempts int) (Resources, error) {
	if prefix == "" {
		prefix = "icekeeper"
	}
	if suffix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		suffix = hex.EncodeToString(b[:])
	}
	if maxAttempts < 1 {
		maxAttempts = config.DefaultMaxTaskAttempts
	}
	name := func(kind string) string { return sanitize(prefix + "-" + kind + "-" + suffix) }
	r := Resources{Bucket: name("descriptors"), LeaseTable: name("leases"), JobsTable: name("jobs")}
	if _, err := cl.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(r.Bucket)}); err != nil {
		return r, fmt.Errorf("localcloud: create bucket %s: %w", r.Bucket, err)
	}
	if err := createTable(ctx, cl, &dynamodb.CreateTableInput{
		TableName:            aws.String(r.LeaseTable),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("table_id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("table_id"), KeyType: ddbtypes.KeyTypeHash}},
	}); err != nil {
		return r, fmt.Errorf("localcloud: create table %s: %w", r.LeaseTable, err)
	}
	if err := createTable(ctx, cl, &dynamodb.CreateTableInput{
		TableName:   aws.String(r.JobsTable),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("job_id"), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("item_key"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String("job_id"), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String("item_key"), KeyType: ddbtypes.KeyTypeRange},
		},
	}); err != nil {
		return r, fmt.Errorf("localcloud: create table %s: %w", r.JobsTable, err)
	}
	var err error
	if r.TaskDLQURL, err = createQueue(ctx, cl, name("tasks-dlq"), nil); err != nil {
		return r, err
	}
	if r.TaskQueueURL, err = createQueue(ctx, cl, name("tasks"), &redrive{dlqURL: r.TaskDLQURL, max: maxAttempts}); err != nil {
		return r, err
	}
	if r.CommitDLQURL, err = createQueue(ctx, cl, name("commits-dlq"), nil); err != nil {
		return r, err
	}
	if r.CommitQueueURL, err = createQueue(ctx, cl, name("commits"), &redrive{dlqURL: r.CommitDLQURL, max: maxAttempts}); err != nil {
		return r, err
	}
	return r, nil
}

// createTable creates a table whose name is this call's alone. A table of
// that name already there is the one an earlier attempt of the same call
// created (the SDK retries a request whose answer it did not read, as it
// did against moto's server under load): it is taken when its key schema
// is the one asked for.
func createTable(ctx context.Context, cl *awsclients.Clients, in *dynamodb.CreateTableInput) error {
	_, err := cl.DynamoDB.CreateTable(ctx, in)
	var inUse *ddbtypes.ResourceInUseException
	if !errors.As(err, &inUse) {
		return err
	}
	out, derr := cl.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	if derr != nil {
		return errors.Join(err, derr)
	}
	if len(out.Table.KeySchema) != len(in.KeySchema) {
		return err
	}
	for i, k := range in.KeySchema {
		if aws.ToString(out.Table.KeySchema[i].AttributeName) != aws.ToString(k.AttributeName) || out.Table.KeySchema[i].KeyType != k.KeyType {
			return err
		}
	}
	return nil
}

type redrive struct {
	dlqURL string
	max    int
}

func createQueue(ctx context.Context, cl *awsclients.Clients, name string, rd *redrive) (string, error) {
	attrs := map[string]string{"VisibilityTimeout": "60"}
	if rd != nil {
		out, err := cl.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(rd.dlqURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return "", fmt.Errorf("localcloud: dead-letter queue of %s: %w", name, err)
		}
		arn := out.Attributes["QueueArn"]
		if arn == "" {
			return "", errors.New("localcloud: dead-letter queue has no ARN")
		}
		attrs["RedrivePolicy"] = `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":` + strconv.Itoa(rd.max) + `}`
	}
	out, err := cl.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("localcloud: create queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// sanitize keeps a name within what S3, DynamoDB and SQS all accept:
// lower-case letters, digits and dashes, at most 63 characters.
func sanitize(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = append(b[:40], b[len(b)-23:]...)
	}
	return strings.Trim(string(b), "-")
}
