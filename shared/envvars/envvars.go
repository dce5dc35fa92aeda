// Package envvars names the environment variables icekeeper's functions
// read. The functions (through package config), the operator CLI and the
// CDK stack (infra/) all use these names, so a setting means the same
// thing everywhere. It has no dependencies, so the CDK app can import it
// without the pipeline's.
package envvars

import (
	"strings"
	"time"
)

// Names.
const (
	CatalogType          = "ICEKEEPER_CATALOG_TYPE"
	CatalogName          = "ICEKEEPER_CATALOG_NAME"
	CatalogURI           = "ICEKEEPER_CATALOG_URI"
	CatalogWarehouse     = "ICEKEEPER_CATALOG_WAREHOUSE"
	CatalogConfig        = "ICEKEEPER_CATALOG_CONFIG"
	CatalogSigV4         = "ICEKEEPER_CATALOG_SIGV4"
	CatalogSignName      = "ICEKEEPER_CATALOG_SIGNING_NAME"
	CatalogSignRegion    = "ICEKEEPER_CATALOG_SIGNING_REGION"
	CatalogProperties    = "ICEKEEPER_CATALOG_PROPERTIES"
	LeaseTable           = "ICEKEEPER_LEASE_TABLE"
	JobsTable            = "ICEKEEPER_JOBS_TABLE"
	TaskQueueURL         = "ICEKEEPER_TASK_QUEUE_URL"
	CommitQueueURL       = "ICEKEEPER_COMMIT_QUEUE_URL"
	Bucket               = "ICEKEEPER_BUCKET"
	Prefix               = "ICEKEEPER_PREFIX"
	Mode                 = "ICEKEEPER_MODE"
	Grants               = "ICEKEEPER_GRANTS"
	EventBus             = "ICEKEEPER_EVENT_BUS"
	MinInterval          = "ICEKEEPER_MIN_INTERVAL"
	SweepMaxJobs         = "ICEKEEPER_SWEEP_MAX_JOBS"
	SweepMaxBytes        = "ICEKEEPER_SWEEP_MAX_BYTES"
	SweepMaxMetadataJobs = "ICEKEEPER_SWEEP_MAX_METADATA_JOBS"
	// SweepConcurrency is how many tables a sweep loads and assesses at
	// once (package trigger).
	SweepConcurrency  = "ICEKEEPER_SWEEP_CONCURRENCY"
	LeaseTTL          = "ICEKEEPER_LEASE_TTL"
	MaxGroupBytes     = "ICEKEEPER_MAX_GROUP_BYTES"
	InlineTaskBytes   = "ICEKEEPER_INLINE_TASK_BYTES"
	InlineRowMapBytes = "ICEKEEPER_INLINE_ROW_MAP_BYTES"
	MaxTaskAttempts   = "ICEKEEPER_MAX_TASK_ATTEMPTS"
	CommitRetries     = "ICEKEEPER_COMMIT_RETRIES"
	ScanConcurrency   = "ICEKEEPER_SCAN_CONCURRENCY"
	// ReadAheadFiles is how many of a group's files a rewriter reads at
	// once ahead of its scan (-1: none; package fileio).
	ReadAheadFiles = "ICEKEEPER_READ_AHEAD_FILES"
	// UploadPartBytes is the size of the parts a rewriter uploads its
	// files in (package fileio; S3 allows 5 MiB to 5 GiB).
	UploadPartBytes  = "ICEKEEPER_UPLOAD_PART_BYTES"
	TargetFileSize   = "ICEKEEPER_TARGET_FILE_SIZE_BYTES"
	S3PathStyle      = "ICEKEEPER_S3_PATH_STYLE"
	CommitTakeover   = "ICEKEEPER_COMMIT_TAKEOVER"
	RewriterMemoryMB = "ICEKEEPER_REWRITER_MEMORY_MB"
	CoordinatorMemMB = "ICEKEEPER_COORDINATOR_MEMORY_MB"
	OrphanListFanOut = "ICEKEEPER_ORPHAN_LIST_FANOUT_FILES"
	RebaseDeletes    = "ICEKEEPER_REBASE_DELETES"
	SortWindowBytes  = "ICEKEEPER_SORT_WINDOW_BYTES"
	ScanPricePerTB   = "ICEKEEPER_SCAN_PRICE_PER_TB"
	// AthenaWorkGroupClasses maps Athena workgroups to workload classes
	// ("bi=dashboard,etl=pipeline"; package workload).
	AthenaWorkGroupClasses = "ICEKEEPER_ATHENA_WORKGROUP_CLASSES"
	LedgerBackOff          = "ICEKEEPER_LEDGER_BACKOFF"
	ExchangePageBytes      = "ICEKEEPER_EXCHANGE_PAGE_BYTES"
	MaxJobFiles            = "ICEKEEPER_MAX_JOB_FILES"
	// RewriterConcurrency is how many groups the stack rewrites at once
	// (the task queue's event source's maximum concurrency), which the
	// planner's throttle bounds a busy table's jobs within.
	RewriterConcurrency = "ICEKEEPER_REWRITER_CONCURRENCY"
	// GrantsFile names a file holding the grant list instead of Grants
	// (relative to LAMBDA_TASK_ROOT when that is set): the CDK stack puts
	// a grant list too long for Lambda's 4 KB of environment variables in
	// the function's code package.
	GrantsFile = "ICEKEEPER_GRANTS_FILE"
	// WakeUpGroup, WakeUpRoleARN and EventBusARN turn on the expiry
	// wake-ups (package wakeup): the EventBridge Scheduler schedule group
	// they go in, the role the scheduler assumes to put their events on
	// the bus, and the bus's ARN. All three, or none.
	WakeUpGroup   = "ICEKEEPER_WAKEUP_GROUP"
	WakeUpRoleARN = "ICEKEEPER_WAKEUP_ROLE_ARN"
	EventBusARN   = "ICEKEEPER_EVENT_BUS_ARN"
)

// DefaultMaxJobFiles is MaxJobFiles' default, for the 1024 MB committer
// that both the functions' defaults and the stack assume: a compaction job
// of this many input files commits in it (measured 2026-12-01: 100,000
// files peaked at 837 MB, 200,000 at 1,081 MB; docs/PERFORMANCE.md). The
// stack scales it by the committer's memory.
const DefaultMaxJobFiles = int64(100_000)

// DefaultRewriterConcurrency is RewriterConcurrency's default, the
// stack's default maximum concurrency of the task queue's event source.
const DefaultRewriterConcurrency = 10

// TaskHeartbeat is how long a rewriter keeps its task invisible at a time:
// on receipt it sets the message's visibility to TaskHeartbeat, and renews
// it every third of that while it works, so a rewriter that dies (its
// timeout, out of memory) lets its task come back within TaskHeartbeat
// instead of the queue's visibility timeout (six rewriter timeouts). A
// visibility change counts from the call
// (https://docs.aws.amazon.com/sdkfornet/v3/apidocs/items/SQS/TChangeMessageVisibilityRequest.html).
// The CDK stack requires the lease to outlast a rewriter's timeout plus
// TaskHeartbeat.
const TaskHeartbeat = 2 * time.Minute

// DefaultMaxTaskAttempts is MaxTaskAttempts' default and the stack's
// maxReceiveCount of both queues: AWS recommends a maxReceiveCount of at
// least 5 on a Lambda event source's queue, since a throttled or
// unanswered receive counts like a failed one
// (https://docs.aws.amazon.com/lambda/latest/dg/sqs-retries.html, "Set the
// maxReceiveCount on the source queue's redrive policy to at least 5").
const DefaultMaxTaskAttempts = 5

// All lists every variable the functions read.
func All() []string {
	return []string{
		CatalogType, CatalogName, CatalogURI, CatalogWarehouse, CatalogConfig, CatalogSigV4, CatalogSignName, CatalogSignRegion, CatalogProperties, LeaseTable, JobsTable, TaskQueueURL, CommitQueueURL, Bucket, Prefix, Mode, Grants, EventBus, MinInterval, SweepMaxJobs, SweepMaxBytes, SweepMaxMetadataJobs, SweepConcurrency, LeaseTTL, MaxGroupBytes, InlineTaskBytes, InlineRowMapBytes, MaxTaskAttempts, CommitRetries, ScanConcurrency, TargetFileSize, S3PathStyle, CommitTakeover, RewriterMemoryMB, CoordinatorMemMB, OrphanListFanOut, RebaseDeletes, SortWindowBytes, ScanPricePerTB, AthenaWorkGroupClasses, LedgerBackOff, ExchangePageBytes, MaxJobFiles, GrantsFile, RewriterConcurrency, ReadAheadFiles, UploadPartBytes, WakeUpGroup, WakeUpRoleARN, EventBusARN,
	}
}

// GrantsFromFile is the grant list a GrantsFile holds: its entries,
// separated by commas or newlines, joined by commas (Grants' syntax).
// Package config reads GrantsFile with it, and the CDK stack's tests read
// the file the stack ships with it.
func GrantsFromFile(content string) string {
	var entries []string
	for _, e := range strings.FieldsFunc(content, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	return strings.Join(entries, ",")
}
