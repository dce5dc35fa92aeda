package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Storage is icekeeper's own state: the bucket of plans, task payloads,
// descriptors and health reports, and the lease and job tables.
type Storage struct {
	Bucket     awss3.Bucket
	LeaseTable awsdynamodb.Table
	JobsTable  awsdynamodb.Table
}

// Key schemas, as shared/harness/localcloud creates them and the code reads them.
const (
	LeaseKey    = "table_id"
	LeaseTTLKey = "purge_at"
	JobKey      = "job_id"
	JobItemKey  = "item_key"
)

// Bucket prefixes (under ICEKEEPER_PREFIX) the code writes: jobs/<id>/
// (plan.json, tasks/, descriptors/, rowmaps/, ...) and health/<table>/
// (reports).
const (
	JobsPrefix   = "jobs/"
	HealthPrefix = "health/"
	// LogPrefix holds the maintenance log, log/<table>/ (shared/joblog).
	LogPrefix = "log/"
	// SummaryPrefix holds the weekly summaries, summary/<yyyy>-W<ww>.json
	// and .html and summary/latest.* (shared/summary).
	SummaryPrefix = "summary/"
	// LocationsPrefix holds the index of the granted tables' locations,
	// locations/index.json, that the sweep writes and the planner reads
	// to name the table of an S3 event (shared/trigger, locations.go).
	LocationsPrefix = "locations/"
	// SweepsPrefix holds the sweeps' cursors, sweeps/<kind>.json: where
	// the next sweep starts after one that ran short of the planner's
	// time (shared/trigger, sweeptime.go).
	SweepsPrefix = "sweeps/"
)

// newStorage creates the bucket (S3-managed encryption, no public access,
// TLS only, old jobs and reports expire) and the two tables (on demand,
// point-in-time recovery, leases purged by TTL on purge_at).
func newStorage(scope constructs.Construct, s Settings) Storage {
	removal := awscdk.RemovalPolicy_RETAIN
	if s.RemovalPolicy == "destroy" {
		removal = awscdk.RemovalPolicy_DESTROY
	}
	bucket := awss3.NewBucket(scope, jsii.String("Bucket"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     removal,
		// With removalPolicy=destroy the stack empties the bucket before
		// deleting it (CloudFormation cannot delete a bucket with objects).
		AutoDeleteObjects: jsii.Bool(s.RemovalPolicy == "destroy"),
		LifecycleRules: &[]*awss3.LifecycleRule{
			{
				Id:                                  jsii.String("expire-jobs"),
				Prefix:                              jsii.String(s.key(JobsPrefix)),
				Expiration:                          awscdk.Duration_Days(jsii.Number(float64(s.JobsExpirationDays))),
				AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
			},
			{
				Id:         jsii.String("expire-health"),
				Prefix:     jsii.String(s.key(HealthPrefix)),
				Expiration: awscdk.Duration_Days(jsii.Number(float64(s.HealthExpirationDays))),
			},
			{
				Id:         jsii.String("expire-log"),
				Prefix:     jsii.String(s.key(LogPrefix)),
				Expiration: awscdk.Duration_Days(jsii.Number(float64(s.MaintenanceLogDays))),
			},
		},
	})
	lease := awsdynamodb.NewTable(scope, jsii.String("Leases"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(LeaseKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(LeaseTTLKey),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: removal,
	})
	jobs := awsdynamodb.NewTable(scope, jsii.String("Jobs"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(JobKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(JobItemKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		// Job and group items carry purge_at, 90 days after creation
		// (shared/jobs.RecordRetention).
		TimeToLiveAttribute: jsii.String(LeaseTTLKey),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: removal,
	})
	return Storage{Bucket: bucket, LeaseTable: lease, JobsTable: jobs}
}

// key is a bucket key under ICEKEEPER_PREFIX, as shared/blob builds it.
func (s Settings) key(name string) string {
	p := strings.Trim(s.Prefix, "/")
	if p == "" {
		return name
	}
	return p + "/" + name
}
