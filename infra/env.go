package main

import (
	"github.com/icekeeper/icekeeper/shared/envvars"
	"strconv"
	"time"
)

// Environment variable names the functions read: package envvars of the
// root module, which shared/config uses too.
const (
	EnvCatalogType       = envvars.CatalogType
	EnvCatalogName       = envvars.CatalogName
	EnvCatalogURI        = envvars.CatalogURI
	EnvCatalogWarehouse  = envvars.CatalogWarehouse
	EnvCatalogConfig     = envvars.CatalogConfig
	EnvCatalogSigV4      = envvars.CatalogSigV4
	EnvCatalogSignName   = envvars.CatalogSignName
	EnvCatalogSignRegion = envvars.CatalogSignRegion
	EnvCatalogProperties = envvars.CatalogProperties
	EnvLeaseTable        = envvars.LeaseTable
	EnvJobsTable         = envvars.JobsTable
	EnvTaskQueueURL      = envvars.TaskQueueURL
	EnvCommitQueueURL    = envvars.CommitQueueURL
	EnvBucket            = envvars.Bucket
	EnvPrefix            = envvars.Prefix
	EnvMode              = envvars.Mode
	EnvGrants            = envvars.Grants
	EnvEventBus          = envvars.EventBus
	EnvMinInterval       = envvars.MinInterval
	EnvSweepMaxJobs      = envvars.SweepMaxJobs
	EnvSweepMaxBytes     = envvars.SweepMaxBytes
	EnvLeaseTTL          = envvars.LeaseTTL
	EnvMaxGroupBytes     = envvars.MaxGroupBytes
	EnvInlineTaskBytes   = envvars.InlineTaskBytes
	EnvMaxTaskAttempts   = envvars.MaxTaskAttempts
	EnvCommitRetries     = envvars.CommitRetries
	EnvScanConcurrency   = envvars.ScanConcurrency
	EnvTargetFileSize    = envvars.TargetFileSize
	EnvS3PathStyle       = envvars.S3PathStyle
	EnvCommitTakeover    = envvars.CommitTakeover
	EnvRewriterMemoryMB  = envvars.RewriterMemoryMB
	EnvCoordinatorMemMB  = envvars.CoordinatorMemMB
)

// EnvNames lists every variable the functions read.
func EnvNames() []string { return envvars.All() }

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
