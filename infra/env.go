package main

import (
	"encoding/json"
	"strconv"
	"strings"
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
		envvars.TaskQueueURL, envvars.CommitQueueURL, envvars.Bucket, envvars.Prefix, envvars.Mode, envvars.Grants, envvars.GrantsFile, envvars.EventBus,
		envvars.MaxTaskAttempts, envvars.CommitTakeover, envvars.LeaseTTL, envvars.RewriterMemoryMB, envvars.CoordinatorMemMB,
		envvars.RewriterConcurrency,
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
	// WakeUpGroup, WakeUpRoleARN and EventBusARN are the expiry wake-ups'
	// (WakeUps), empty when they are off.
	WakeUpGroup, WakeUpRoleARN, EventBusARN string
}

// FunctionEnvironment is the environment every function gets: the settings in
// config.go's names, the resource names, then the extra variables. Empty
// values are left out (the functions treat unset and empty alike).
//
// A grant list that would take the environment past Lambda's 4 KB goes in
// the functions' code instead (GrantsFileName, ICEKEEPER_GRANTS_FILE):
// GrantsInFile.
func (s Settings) FunctionEnvironment(n Names) map[string]string {
	return s.environment(n, !s.GrantsInFile())
}

// GrantsFileName is the file in each function's code package that holds a
// grant list too long for the environment, one entry per line.
const GrantsFileName = "grants.txt"

// GrantsInFile reports whether the grant list goes in the functions' code
// (GrantsFileName) rather than ICEKEEPER_GRANTS: when the environment with
// it could exceed Lambda's 4 KB for all variables together (Lambda quotas,
// https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html),
// the resource names counted at their longest. Small grant lists stay in
// the environment, where the console shows them.
func (s Settings) GrantsInFile() bool {
	return s.environmentSize(true) > LambdaEnvironmentLimit
}

// environmentSize is the size of the environment as JSON (an upper bound
// of its names and values), with the deploy-time names at their longest.
func (s Settings) environmentSize(grantsInline bool) int {
	long := strings.Repeat("x", tokenNameLength)
	raw, _ := json.Marshal(s.environment(Names{Bucket: long, LeaseTable: long, JobsTable: long, TaskQueueURL: long, CommitQueueURL: long, EventBus: s.EventBus,
		WakeUpGroup: long, WakeUpRoleARN: long, EventBusARN: long}, grantsInline))
	return len(raw)
}

// GrantsFileContent is GrantsFileName's content: the grant list's normal
// form, one entry per line.
func (s Settings) GrantsFileContent() string {
	return strings.Join(s.Grants.Entries(), "\n") + "\n"
}

func (s Settings) environment(n Names, grantsInline bool) map[string]string {
	grants, grantsFile := s.Grants.String(), ""
	if !grantsInline && !s.Grants.Empty() {
		grants, grantsFile = "", GrantsFileName
	}
	env := map[string]string{
		envvars.Mode:             s.Mode,
		envvars.Grants:           grants,
		envvars.GrantsFile:       grantsFile,
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
		envvars.WakeUpGroup:      n.WakeUpGroup,
		envvars.WakeUpRoleARN:    n.WakeUpRoleARN,
		envvars.EventBusARN:      n.EventBusARN,
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
		// How many groups the task queue's event source rewrites at once:
		// the planner's throttle bounds a busy table's job within it.
		envvars.RewriterConcurrency: strconv.Itoa(s.RewriterConcurrency),
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
