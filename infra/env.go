package main

import (
	"strconv"
	"time"

	"github.com/icekeeper/icekeeper/shared/envvars"
)

// EnvNames lists every variable the functions read.
func EnvNames() []string { return envvars.All() }

// managedEnvNames are the variables the stack derives from its own settings
// and resources; the environment setting may not override them.
func managedEnvNames() []string {
	return []string{
		envvars.CatalogType, envvars.CatalogName, envvars.CatalogURI, envvars.CatalogWarehouse, envvars.CatalogConfig, envvars.CatalogSigV4,
		envvars.CatalogSignName, envvars.CatalogSignRegion, envvars.CatalogProperties, envvars.LeaseTable, envvars.JobsTable,
		envvars.TaskQueueURL, envvars.CommitQueueURL, envvars.Bucket, envvars.Prefix, envvars.Mode, envvars.Grants, envvars.EventBus,
		envvars.MaxTaskAttempts, envvars.CommitTakeover, envvars.LeaseTTL, envvars.RewriterMemoryMB, envvars.CoordinatorMemMB,
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
		envvars.Mode:             s.Mode,
		envvars.Grants:           s.Grants.String(),
		envvars.CatalogType:      s.CatalogType,
		envvars.CatalogName:      s.CatalogName,
		envvars.CatalogURI:       s.CatalogURI,
		envvars.CatalogWarehouse: s.CatalogWarehouse,
		envvars.LeaseTable:       n.LeaseTable,
		envvars.JobsTable:        n.JobsTable,
		envvars.TaskQueueURL:     n.TaskQueueURL,
		envvars.CommitQueueURL:   n.CommitQueueURL,
		envvars.Bucket:           n.Bucket,
		envvars.Prefix:           s.Prefix,
		envvars.EventBus:         n.EventBus,
		envvars.MaxTaskAttempts:  strconv.Itoa(s.MaxTaskAttempts),
		envvars.CommitTakeover:   s.CommitTakeover.Round(time.Second).String(),
		envvars.LeaseTTL:         s.LeaseTTL.Round(time.Second).String(),
		// For the committer's cost estimate: one size stands for the planner
		// and the committer, so the larger of the two (an upper bound).
		envvars.RewriterMemoryMB: strconv.Itoa(s.Rewriter.MemoryMB),
		envvars.CoordinatorMemMB: strconv.Itoa(max(s.Planner.MemoryMB, s.Committer.MemoryMB)),
		// What the committer's memory can commit (overridable through the
		// environment setting).
		envvars.MaxJobFiles: strconv.FormatInt(MaxJobFilesFor(s.Committer.MemoryMB), 10),
	}
	if s.CatalogSigV4 {
		env[envvars.CatalogSigV4] = "true"
		env[envvars.CatalogSignName] = s.CatalogSigningName
		env[envvars.CatalogSignRegion] = s.CatalogSigningRegion
	}
	if len(s.CatalogProperties) > 0 {
		env[envvars.CatalogProperties] = formatProperties(s.CatalogProperties)
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

// formatProperties renders k=v,k=v sorted by key, as catalogconfig.ParseProperties
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

// MaxJobFilesFor is the compaction job size, in input files, a committer of
// memoryMB commits: 100,000 per 1024 MB, as measured
// (envvars.DefaultMaxJobFiles).
func MaxJobFilesFor(memoryMB int) int64 {
	return envvars.DefaultMaxJobFiles * int64(memoryMB) / 1024
}
