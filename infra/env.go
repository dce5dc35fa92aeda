package main

import (
	"strconv"
	"time"
)

// Environment variable names the functions read, exactly as
// shared/config/config.go names them (stack_test.go checks the two lists
// against each other, so a rename there fails the infra tests).
const (
	EnvCatalogType       = "ICEKEEPER_CATALOG_TYPE"
	EnvCatalogName       = "ICEKEEPER_CATALOG_NAME"
	EnvCatalogURI        = "ICEKEEPER_CATALOG_URI"
	EnvCatalogWarehouse  = "ICEKEEPER_CATALOG_WAREHOUSE"
	EnvCatalogConfig     = "ICEKEEPER_CATALOG_CONFIG"
	EnvCatalogSigV4      = "ICEKEEPER_CATALOG_SIGV4"
	EnvCatalogSignName   = "ICEKEEPER_CATALOG_SIGNING_NAME"
	EnvCatalogSignRegion = "ICEKEEPER_CATALOG_SIGNING_REGION"
	EnvCatalogProperties = "ICEKEEPER_CATALOG_PROPERTIES"
	EnvLeaseTable        = "ICEKEEPER_LEASE_TABLE"
	EnvJobsTable         = "ICEKEEPER_JOBS_TABLE"
	EnvTaskQueueURL      = "ICEKEEPER_TASK_QUEUE_URL"
	EnvCommitQueueURL    = "ICEKEEPER_COMMIT_QUEUE_URL"
	EnvBucket            = "ICEKEEPER_BUCKET"
	EnvPrefix            = "ICEKEEPER_PREFIX"
	EnvMode              = "ICEKEEPER_MODE"
	EnvGrants            = "ICEKEEPER_GRANTS"
	EnvEventBus          = "ICEKEEPER_EVENT_BUS"
	EnvMinInterval       = "ICEKEEPER_MIN_INTERVAL"
	EnvSweepMaxJobs      = "ICEKEEPER_SWEEP_MAX_JOBS"
	EnvSweepMaxBytes     = "ICEKEEPER_SWEEP_MAX_BYTES"
	EnvLeaseTTL          = "ICEKEEPER_LEASE_TTL"
	EnvMaxGroupBytes     = "ICEKEEPER_MAX_GROUP_BYTES"
	EnvInlineTaskBytes   = "ICEKEEPER_INLINE_TASK_BYTES"
	EnvMaxTaskAttempts   = "ICEKEEPER_MAX_TASK_ATTEMPTS"
	EnvCommitRetries     = "ICEKEEPER_COMMIT_RETRIES"
	EnvScanConcurrency   = "ICEKEEPER_SCAN_CONCURRENCY"
	EnvTargetFileSize    = "ICEKEEPER_TARGET_FILE_SIZE_BYTES"
	EnvS3PathStyle       = "ICEKEEPER_S3_PATH_STYLE"
	EnvCommitTakeover    = "ICEKEEPER_COMMIT_TAKEOVER"
	EnvRewriterMemoryMB  = "ICEKEEPER_REWRITER_MEMORY_MB"
	EnvCoordinatorMemMB  = "ICEKEEPER_COORDINATOR_MEMORY_MB"
)

// EnvNames lists every variable the functions read.
func EnvNames() []string {
	return []string{
		EnvCatalogType, EnvCatalogName, EnvCatalogURI, EnvCatalogWarehouse, EnvCatalogConfig, EnvCatalogSigV4,
		EnvCatalogSignName, EnvCatalogSignRegion, EnvCatalogProperties, EnvLeaseTable, EnvJobsTable,
		EnvTaskQueueURL, EnvCommitQueueURL, EnvBucket, EnvPrefix, EnvMode, EnvGrants, EnvEventBus,
		EnvMinInterval, EnvSweepMaxJobs, EnvSweepMaxBytes, EnvLeaseTTL, EnvMaxGroupBytes, EnvInlineTaskBytes,
		EnvMaxTaskAttempts, EnvCommitRetries, EnvScanConcurrency, EnvTargetFileSize, EnvS3PathStyle,
		EnvCommitTakeover, EnvRewriterMemoryMB, EnvCoordinatorMemMB,
	}
}

// managedEnvNames are the variables the stack derives from its own settings
// and resources; the environment setting may not override them.
func managedEnvNames() []string {
	return []string{
		EnvCatalogType, EnvCatalogName, EnvCatalogURI, EnvCatalogWarehouse, EnvCatalogConfig, EnvCatalogSigV4,
		EnvCatalogSignName, EnvCatalogSignRegion, EnvCatalogProperties, EnvLeaseTable, EnvJobsTable,
		EnvTaskQueueURL, EnvCommitQueueURL, EnvBucket, EnvPrefix, EnvMode, EnvGrants, EnvEventBus,
		EnvMaxTaskAttempts, EnvCommitTakeover, EnvRewriterMemoryMB, EnvCoordinatorMemMB,
	}
}

func knownEnv(name string) bool   { return contains(EnvNames(), name) }
func managedEnv(name string) bool { return contains(managedEnvNames(), name) }

func contains(list []string, v string) bool {
	for _, e := range list {
		if e == v {
			return true
		}
	}
	return false
}

// Names are the deploy-time names of the stack's resources that the
// functions are told about.
type Names struct {
	Bucket, LeaseTable, JobsTable, TaskQueueURL, CommitQueueURL, EventBus string
}

// FunctionEnvironment is the environment every function gets: the settings in
// config.go's names, the resource names, then the extra variables. Empty
// values are left out (the functions treat unset and empty alike).
func (s Settings) FunctionEnvironment(n Names) map[string]string {
	env := map[string]string{
		EnvMode:             s.Mode,
		EnvGrants:           s.Grants.String(),
		EnvCatalogType:      s.CatalogType,
		EnvCatalogName:      s.CatalogName,
		EnvCatalogURI:       s.CatalogURI,
		EnvCatalogWarehouse: s.CatalogWarehouse,
		EnvLeaseTable:       n.LeaseTable,
		EnvJobsTable:        n.JobsTable,
		EnvTaskQueueURL:     n.TaskQueueURL,
		EnvCommitQueueURL:   n.CommitQueueURL,
		EnvBucket:           n.Bucket,
		EnvPrefix:           s.Prefix,
		EnvEventBus:         n.EventBus,
		EnvMaxTaskAttempts:  strconv.Itoa(s.MaxTaskAttempts),
		EnvCommitTakeover:   s.CommitTakeover.Round(time.Second).String(),
		// For the committer's cost estimate: one size stands for the planner
		// and the committer, so the larger of the two (an upper bound).
		EnvRewriterMemoryMB: strconv.Itoa(s.Rewriter.MemoryMB),
		EnvCoordinatorMemMB: strconv.Itoa(max(s.Planner.MemoryMB, s.Committer.MemoryMB)),
	}
	if s.CatalogSigV4 {
		env[EnvCatalogSigV4] = "true"
		env[EnvCatalogSignName] = s.CatalogSigningName
		env[EnvCatalogSignRegion] = s.CatalogSigningRegion
	}
	if len(s.CatalogProperties) > 0 {
		env[EnvCatalogProperties] = formatProperties(s.CatalogProperties)
	}
	for k, v := range s.Environment {
		env[k] = v
	}
	for k, v := range env {
		if v == "" {
			delete(env, k)
		}
	}
	return env
}

// formatProperties renders k=v,k=v sorted by key, as catalogs.ParseProperties
// reads it.
func formatProperties(m map[string]string) string {
	out := ""
	for i, k := range sortedKeys(m) {
		if i > 0 {
			out += ","
		}
		out += k + "=" + m[k]
	}
	return out
}
