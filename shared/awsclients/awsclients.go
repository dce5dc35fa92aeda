// Package awsclients builds the AWS SDK clients icekeeper uses from the
// standard SDK configuration (credentials chain, AWS_REGION,
// AWS_ENDPOINT_URL and the per-service AWS_ENDPOINT_URL_<SERVICE>), so the
// same code talks to AWS, LocalStack or the in-process emulator.
//
// The one addition: S3 uses path-style addressing when an endpoint override
// is set (emulators do not serve virtual-hosted buckets) or when
// ICEKEEPER_S3_PATH_STYLE=true.
package awsclients

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Clients are the SDK clients of the pipeline.
type Clients struct {
	Config   aws.Config
	S3       *s3.Client
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	Events   *eventbridge.Client
}

// Load reads the standard SDK configuration and builds the clients. Each
// adjust runs on the configuration before the clients are built (for
// example to add tracing middleware).
func Load(ctx context.Context, adjust ...func(*aws.Config)) (*Clients, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("awsclients: load AWS configuration: %w", err)
	}
	for _, a := range adjust {
		a(&cfg)
	}
	return New(cfg), nil
}

// New builds the clients from an aws.Config.
func New(cfg aws.Config) *Clients {
	pathStyle := os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	if v, err := strconv.ParseBool(os.Getenv("ICEKEEPER_S3_PATH_STYLE")); err == nil {
		pathStyle = v
	}
	return &Clients{
		Config:   cfg,
		S3:       s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle; quietChecksums(o) }),
		DynamoDB: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = emulated() }),
		SQS:      sqs.NewFromConfig(cfg),
		Events:   eventbridge.NewFromConfig(cfg),
	}
}

// ForEndpoint builds clients that talk to an emulator at endpoint (for
// example the in-process one) with static test credentials. Each adjust
// runs on the configuration first (tests add a middleware that records
// every call).
func ForEndpoint(endpoint, region string, adjust ...func(*aws.Config)) *Clients {
	if region == "" {
		region = "us-east-1"
	}
	cfg := aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	}
	for _, a := range adjust {
		a(&cfg)
	}
	return &Clients{
		Config:   cfg,
		S3:       s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true; quietChecksums(o) }),
		DynamoDB: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true }),
		SQS:      sqs.NewFromConfig(cfg),
		Events:   eventbridge.NewFromConfig(cfg),
	}
}

// quietChecksums stops the SDK from logging a warning for every response
// without a checksum it can validate (emulators and LocalStack send none):
// the validation itself is unchanged, and the warning is noise that flooded
// the CLI's output.
func quietChecksums(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true }

// emulated reports whether an endpoint override points the SDK at an
// emulator or LocalStack. Their DynamoDB responses carry CRC32 headers that
// do not match (the SDK logged a warning per response), so the CRC check
// is left to real AWS, where it stays on.
func emulated() bool {
	return os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != ""
}
