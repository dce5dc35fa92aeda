package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/icekeeper/icekeeper/shared/envvars"
)

// ErrSettings means a context setting is missing, malformed or unsafe; the
// app refuses to synthesize. Fix the setting named in the message.
var ErrSettings = errors.New("icekeeper stack: invalid setting")

// Modes, as ICEKEEPER_MODE names them.
const (
	ModeOff      = "off"
	ModeAdvisory = "advisory"
	ModeActive   = "active"
)

// MinRewriterMemoryMB is the least memory the stack gives a rewriter (see
// the check in Validate).
const MinRewriterMemoryMB = 1024

// MinTaskAttempts is the least maxReceiveCount the stack accepts: AWS's
// recommendation for a Lambda event source's queue
// (https://docs.aws.amazon.com/lambda/latest/dg/sqs-retries.html).
const MinTaskAttempts = 5

// Function names, which are also the asset directory names under AssetDir
// (bin/lambda/<function>/bootstrap, built by `make lambdas`).
const (
	Planner   = "planner"
	Rewriter  = "rewriter"
	Committer = "committer"
)

// Functions lists the three functions in pipeline order.
func Functions() []string { return []string{Planner, Rewriter, Committer} }

// FunctionSettings sizes one Lambda function.
type FunctionSettings struct {
	MemoryMB int
	Timeout  time.Duration
}

// Thresholds are the alarm thresholds that are not fixed at "more than
// zero".
type Thresholds struct {
	// JobsFailed alarms when at least this many jobs fail in an hour.
	JobsFailed int
	// JobsAborted alarms when at least this many jobs abort in an hour
	// (aborts are expected under concurrent position deletes; many mean a
	// table whose writers and icekeeper keep colliding).
	JobsAborted int
	// CommitConflictsPerHour and CommitRetriesPerHour bound the commit
	// conflict rate.
	CommitConflictsPerHour int
	CommitRetriesPerHour   int
	// DurationPercent alarms when a function's p99 duration exceeds this
	// share of its timeout.
	DurationPercent int
}

// Settings are everything the stack is built from. They come from the CDK
// context (cdk.json or `cdk -c key=value`); infra/README.md documents each
// key. DefaultSettings gives the defaults; Validate checks a whole set.
type Settings struct {
	// Mode is ICEKEEPER_MODE: off, advisory or active.
	Mode string
	// Grants is the operator's key (ICEKEEPER_GRANTS).
	Grants Grants

	CatalogType          string
	CatalogName          string
	CatalogURI           string
	CatalogWarehouse     string
	CatalogSigV4         bool
	CatalogSigningName   string
	CatalogSigningRegion string
	CatalogProperties    map[string]string

	// WarehouseLocation is the S3 location under which granted tables live
	// (default: CatalogWarehouse when it is an s3:// URI).
	WarehouseLocation string
	// TableLocationTemplate derives a granted table's location from the
	// warehouse: {warehouse}, {namespace} (dotted), {namespacePath}
	// (slash-separated) and {table}.
	TableLocationTemplate string
	// TableLocations gives explicit locations by grant ("ns.table" or
	// "ns.*"), overriding the template.
	TableLocations map[string]string

	// Prefix is ICEKEEPER_PREFIX, the key prefix in icekeeper's bucket.
	Prefix string
	// EventBus is ICEKEEPER_EVENT_BUS (audit events and the custom commit
	// rule).
	EventBus string
	// SweepSchedule is the EventBridge schedule expression of the sweep.
	SweepSchedule string
	// OrphanSchedule is the EventBridge schedule expression of the orphan
	// cleanup sweep (tables whose owner set icekeeper.orphans.enabled).
	OrphanSchedule string
	// SummarySchedule is the EventBridge schedule expression of the
	// weekly summary (package summary): Mondays 06:00 UTC by default, the
	// week before being complete by then.
	SummarySchedule string

	Planner, Rewriter, Committer FunctionSettings
	// RewriterConcurrency is the task queue event source's maximum
	// concurrency: how many groups are rewritten at once (the fan-out
	// throttle).
	RewriterConcurrency int
	// QuerySignals routes query signals to the planner (the custom query
	// event and Athena's query state changes), which records them for
	// the layout recommendation; on by default.
	QuerySignals bool
	// ExpiryWakeUps lets the planner schedule each table's next visit for
	// when its next snapshot comes due for expiry, and a visit for when a
	// cooldown an event found held ends (EventBridge Scheduler one-time
	// schedules; shared/wakeup); mode active, on by default.
	ExpiryWakeUps bool
	// AthenaWorkGroups are the Athena workgroups whose queries are read
	// back as query signals: the only workgroups the planner may read a
	// query execution of, and the only ones the Athena rule routes.
	AthenaWorkGroups []string
	// RewriterEphemeralMB is the rewriter's /tmp size (Lambda: 512 to
	// 10240 MB): a sort compaction group larger than the rewriter's sort
	// window is sorted in runs spilled there (ICEKEEPER_SORT_WINDOW_BYTES).
	RewriterEphemeralMB int
	// RewriterReserved is the rewriter's reserved concurrency, 0 for none
	// (the default: a new account's whole concurrency quota can be 10, and
	// Lambda refuses a reservation that leaves less than 10 unreserved).
	// When set it must be at least RewriterConcurrency, or the poller is
	// throttled and throttled receives use up attempts.
	RewriterReserved int
	// MaxTaskAttempts is ICEKEEPER_MAX_TASK_ATTEMPTS and both queues'
	// maxReceiveCount.
	MaxTaskAttempts int
	// CommitTakeover is ICEKEEPER_COMMIT_TAKEOVER; the commit queue's
	// visibility timeout spans more than it.
	CommitTakeover time.Duration
	// LeaseTTL is ICEKEEPER_LEASE_TTL: how long a job keeps its table
	// after its last renewal (each task renews it, and the committer).
	LeaseTTL time.Duration

	JobsExpirationDays   int
	HealthExpirationDays int
	// MaintenanceLogDays is how long maintenance log records are kept.
	MaintenanceLogDays int
	LogRetentionDays   int

	// Alarms turns the alarms and the dashboard on (default true).
	Alarms     bool
	AlarmEmail string
	Thresholds Thresholds

	// RemovalPolicy of the bucket and tables: retain or destroy.
	RemovalPolicy string
	// Environment holds extra ICEKEEPER_* variables (tuning such as
	// ICEKEEPER_SWEEP_MAX_JOBS), set on every function.
	Environment map[string]string

	// KMSKeyARNs are the KMS keys the warehouse's objects are encrypted
	// with (SSE-KMS): every function that reads table objects may decrypt
	// with them, and those that write may generate data keys.
	KMSKeyARNs []string

	// AssetDir holds <function>/bootstrap for each function.
	AssetDir string
	// Architecture is arm64 (default) or x86_64.
	Architecture string
}

// DefaultSettings returns the defaults documented in infra/README.md.
func DefaultSettings() Settings {
	return Settings{
		Mode:                  ModeOff,
		CatalogType:           "glue",
		CatalogName:           "default",
		TableLocationTemplate: "{warehouse}/{namespace}.db/{table}",
		TableLocations:        map[string]string{},
		CatalogProperties:     map[string]string{},
		EventBus:              "default",
		SweepSchedule:         "rate(1 hour)",
		OrphanSchedule:        "rate(7 days)",
		// EventBridge cron: minutes hours day-of-month month day-of-week
		// year, one of the two days "?" (EventBridge User Guide, "Cron
		// expressions reference":
		// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-cron-expressions.html).
		SummarySchedule: "cron(0 6 ? * MON *)",
		Planner:         FunctionSettings{MemoryMB: 1024, Timeout: 5 * time.Minute},
		// 1769 MB is one vCPU's worth of CPU (AWS Lambda developer guide,
		// "Configuring Lambda function memory"). A rewriter is mostly one
		// core of zstd: more memory buys CPU it barely uses (two cores did
		// 1.17x one) at a higher price per second, so this is the cheapest
		// size per GB compacted that is not slower per core
		// (docs/PERFORMANCE.md, "Choosing the rewriter's memory").
		Rewriter:             FunctionSettings{MemoryMB: 1769, Timeout: 15 * time.Minute},
		Committer:            FunctionSettings{MemoryMB: 1024, Timeout: 10 * time.Minute},
		RewriterConcurrency:  10,
		RewriterEphemeralMB:  4096,
		QuerySignals:         true,
		ExpiryWakeUps:        true,
		AthenaWorkGroups:     []string{"primary"},
		MaxTaskAttempts:      envvars.DefaultMaxTaskAttempts,
		CommitTakeover:       16 * time.Minute,
		LeaseTTL:             30 * time.Minute,
		JobsExpirationDays:   14,
		HealthExpirationDays: 90,
		MaintenanceLogDays:   400,
		LogRetentionDays:     30,
		Alarms:               true,
		Thresholds: Thresholds{
			JobsFailed: 1, JobsAborted: 5, CommitConflictsPerHour: 10, CommitRetriesPerHour: 20, DurationPercent: 80,
		},
		RemovalPolicy: "retain",
		Environment:   map[string]string{},
		AssetDir:      filepath.Join("..", "bin", "lambda"),
		Architecture:  "arm64",
	}
}

// Context keys, as written in cdk.json or passed with `cdk -c key=value`.
const (
	CtxMode                  = "mode"
	CtxGrants                = "grants"
	CtxCatalogType           = "catalogType"
	CtxCatalogName           = "catalogName"
	CtxCatalogURI            = "catalogUri"
	CtxCatalogWarehouse      = "catalogWarehouse"
	CtxCatalogSigV4          = "catalogSigV4"
	CtxCatalogSigningName    = "catalogSigningName"
	CtxCatalogSigningRegion  = "catalogSigningRegion"
	CtxCatalogProperties     = "catalogProperties"
	CtxWarehouseLocation     = "warehouseLocation"
	CtxTableLocationTemplate = "tableLocationTemplate"
	CtxTableLocations        = "tableLocations"
	CtxPrefix                = "prefix"
	CtxEventBus              = "eventBus"
	CtxSweepSchedule         = "sweepSchedule"
	CtxOrphanSchedule        = "orphanSchedule"
	CtxSummarySchedule       = "summarySchedule"
	CtxPlannerMemory         = "plannerMemoryMb"
	CtxPlannerTimeout        = "plannerTimeout"
	CtxRewriterMemory        = "rewriterMemoryMb"
	CtxRewriterTimeout       = "rewriterTimeout"
	CtxCommitterMemory       = "committerMemoryMb"
	CtxCommitterTimeout      = "committerTimeout"
	CtxRewriterConcurrency   = "rewriterMaxConcurrency"
	CtxRewriterReserved      = "rewriterReservedConcurrency"
	CtxRewriterEphemeral     = "rewriterEphemeralStorageMb"
	CtxQuerySignals          = "querySignals"
	CtxExpiryWakeUps         = "expiryWakeUps"
	CtxAthenaWorkGroups      = "athenaWorkGroups"
	CtxMaxTaskAttempts       = "maxTaskAttempts"
	CtxCommitTakeover        = "commitTakeover"
	CtxLeaseTTL              = "leaseTtl"
	CtxJobsExpirationDays    = "jobsExpirationDays"
	CtxHealthExpirationDays  = "healthExpirationDays"
	CtxMaintenanceLogDays    = "maintenanceLogDays"
	CtxLogRetentionDays      = "logRetentionDays"
	CtxAlarms                = "alarms"
	CtxAlarmEmail            = "alarmEmail"
	CtxJobsFailedThreshold   = "alarmJobsFailed"
	CtxJobsAbortedThreshold  = "alarmJobsAborted"
	CtxCommitConflicts       = "alarmCommitConflictsPerHour"
	CtxCommitRetries         = "alarmCommitRetriesPerHour"
	CtxDurationPercent       = "alarmDurationPercent"
	CtxRemovalPolicy         = "removalPolicy"
	CtxEnvironment           = "environment"
	CtxAssetDir              = "assetDir"
	CtxArchitecture          = "architecture"
	CtxKMSKeyARNs            = "warehouseKmsKeyArns"
)

// CtxStackName names the stack (main.go; default Icekeeper).
const CtxStackName = "stackName"

var athenaWorkGroup = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,128}$`)

// ContextKeys lists every context key the app reads.
func ContextKeys() []string {
	return []string{
		CtxMode, CtxGrants, CtxCatalogType, CtxCatalogName, CtxCatalogURI, CtxCatalogWarehouse, CtxCatalogSigV4,
		CtxCatalogSigningName, CtxCatalogSigningRegion, CtxCatalogProperties, CtxWarehouseLocation,
		CtxTableLocationTemplate, CtxTableLocations, CtxPrefix, CtxEventBus, CtxSweepSchedule, CtxOrphanSchedule, CtxSummarySchedule, CtxPlannerMemory,
		CtxPlannerTimeout, CtxRewriterMemory, CtxRewriterTimeout, CtxCommitterMemory, CtxCommitterTimeout,
		CtxRewriterConcurrency, CtxRewriterReserved, CtxRewriterEphemeral, CtxQuerySignals, CtxExpiryWakeUps, CtxAthenaWorkGroups, CtxMaxTaskAttempts, CtxCommitTakeover, CtxLeaseTTL, CtxJobsExpirationDays, CtxHealthExpirationDays, CtxMaintenanceLogDays,
		CtxLogRetentionDays, CtxAlarms, CtxAlarmEmail, CtxJobsFailedThreshold, CtxJobsAbortedThreshold,
		CtxCommitConflicts, CtxCommitRetries, CtxDurationPercent, CtxRemovalPolicy, CtxEnvironment, CtxAssetDir,
		CtxArchitecture, CtxKMSKeyARNs, CtxStackName,
	}
}

// SettingsFromContext reads the settings from a construct's context over
// the defaults, then validates them. Values may be JSON-typed (cdk.json) or
// strings (`-c key=value`): numbers, booleans and durations parse from
// strings, and objects from a JSON string.
func SettingsFromContext(node constructs.Node) (Settings, error) {
	s := DefaultSettings()
	r := contextReader{node: node}
	r.str(CtxMode, &s.Mode)
	var grants string
	r.list(CtxGrants, &grants)
	r.str(CtxCatalogType, &s.CatalogType)
	r.str(CtxCatalogName, &s.CatalogName)
	r.str(CtxCatalogURI, &s.CatalogURI)
	r.str(CtxCatalogWarehouse, &s.CatalogWarehouse)
	r.boolean(CtxCatalogSigV4, &s.CatalogSigV4)
	r.str(CtxCatalogSigningName, &s.CatalogSigningName)
	r.str(CtxCatalogSigningRegion, &s.CatalogSigningRegion)
	r.properties(CtxCatalogProperties, s.CatalogProperties)
	r.str(CtxWarehouseLocation, &s.WarehouseLocation)
	r.str(CtxTableLocationTemplate, &s.TableLocationTemplate)
	r.object(CtxTableLocations, s.TableLocations)
	r.str(CtxPrefix, &s.Prefix)
	r.str(CtxEventBus, &s.EventBus)
	r.str(CtxSweepSchedule, &s.SweepSchedule)
	r.str(CtxOrphanSchedule, &s.OrphanSchedule)
	r.str(CtxSummarySchedule, &s.SummarySchedule)
	r.integer(CtxPlannerMemory, &s.Planner.MemoryMB)
	r.duration(CtxPlannerTimeout, &s.Planner.Timeout)
	r.integer(CtxRewriterMemory, &s.Rewriter.MemoryMB)
	r.duration(CtxRewriterTimeout, &s.Rewriter.Timeout)
	r.integer(CtxCommitterMemory, &s.Committer.MemoryMB)
	r.duration(CtxCommitterTimeout, &s.Committer.Timeout)
	r.integer(CtxRewriterConcurrency, &s.RewriterConcurrency)
	r.integer(CtxRewriterEphemeral, &s.RewriterEphemeralMB)
	r.boolean(CtxQuerySignals, &s.QuerySignals)
	r.boolean(CtxExpiryWakeUps, &s.ExpiryWakeUps)
	r.integer(CtxRewriterReserved, &s.RewriterReserved)
	r.integer(CtxMaxTaskAttempts, &s.MaxTaskAttempts)
	r.duration(CtxCommitTakeover, &s.CommitTakeover)
	r.duration(CtxLeaseTTL, &s.LeaseTTL)
	r.integer(CtxJobsExpirationDays, &s.JobsExpirationDays)
	r.integer(CtxHealthExpirationDays, &s.HealthExpirationDays)
	r.integer(CtxMaintenanceLogDays, &s.MaintenanceLogDays)
	r.integer(CtxLogRetentionDays, &s.LogRetentionDays)
	r.boolean(CtxAlarms, &s.Alarms)
	r.str(CtxAlarmEmail, &s.AlarmEmail)
	r.integer(CtxJobsFailedThreshold, &s.Thresholds.JobsFailed)
	r.integer(CtxJobsAbortedThreshold, &s.Thresholds.JobsAborted)
	r.integer(CtxCommitConflicts, &s.Thresholds.CommitConflictsPerHour)
	r.integer(CtxCommitRetries, &s.Thresholds.CommitRetriesPerHour)
	r.integer(CtxDurationPercent, &s.Thresholds.DurationPercent)
	r.str(CtxRemovalPolicy, &s.RemovalPolicy)
	r.object(CtxEnvironment, s.Environment)
	r.str(CtxAssetDir, &s.AssetDir)
	r.str(CtxArchitecture, &s.Architecture)
	wgs := strings.Join(s.AthenaWorkGroups, ",")
	r.list(CtxAthenaWorkGroups, &wgs)
	s.AthenaWorkGroups = nil
	for _, w := range strings.Split(wgs, ",") {
		if w = strings.TrimSpace(w); w != "" {
			s.AthenaWorkGroups = append(s.AthenaWorkGroups, w)
		}
	}
	var kms string
	r.list(CtxKMSKeyARNs, &kms)
	for _, k := range strings.Split(kms, ",") {
		if k = strings.TrimSpace(k); k != "" {
			s.KMSKeyARNs = append(s.KMSKeyARNs, k)
		}
	}
	if len(r.errs) > 0 {
		return s, errors.Join(r.errs...)
	}
	g, err := ParseGrants(grants)
	if err != nil {
		return s, fmt.Errorf("%w: %s: %v", ErrSettings, CtxGrants, err)
	}
	s.Grants = g
	s.Mode = strings.ToLower(strings.TrimSpace(s.Mode))
	return s, s.Validate()
}

// Validate checks the settings as a whole and fails with a message naming
// the setting. It also checks that the function bootstraps exist.
func (s Settings) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrSettings, key, fmt.Sprintf(format, args...)))
	}
	switch s.Mode {
	case ModeOff, ModeAdvisory:
	case ModeActive:
		if s.Grants.Empty() {
			bad(CtxGrants, "mode=active needs a non-empty grant list (the functions refuse to start in mode active without ICEKEEPER_GRANTS); grant namespaces or tables, e.g. -c grants=analytics.*,sales.orders")
		}
	default:
		bad(CtxMode, "%q: want off, advisory or active", s.Mode)
	}
	switch s.CatalogType {
	case "glue", "rest", "hive", "sql":
	default:
		bad(CtxCatalogType, "%q: want glue, rest, hive or sql", s.CatalogType)
	}
	if s.CatalogType == "rest" && s.CatalogURI == "" && s.Mode != ModeOff {
		bad(CtxCatalogURI, "a rest catalog needs its endpoint")
	}
	for _, k := range sortedKeys(s.CatalogProperties) {
		if credentialShaped(k) {
			bad(CtxCatalogProperties, "%q looks like a credential; Lambda environment variables are readable by anyone who can read the function's configuration: use IAM (SigV4) instead", k)
		}
		if strings.ContainsAny(k, ",=") || strings.Contains(s.CatalogProperties[k], ",") {
			bad(CtxCatalogProperties, "%q: keys cannot contain commas or '=', values cannot contain commas (ICEKEEPER_CATALOG_PROPERTIES is k=v,k=v)", k)
		}
	}
	if s.WarehouseLocation != "" && !isS3URI(s.WarehouseLocation) {
		bad(CtxWarehouseLocation, "%q: want an s3:// location", s.WarehouseLocation)
	}
	for _, k := range sortedKeys(s.TableLocations) {
		if !isS3URI(s.TableLocations[k]) {
			bad(CtxTableLocations, "%s=%q: want an s3:// location", k, s.TableLocations[k])
		}
		if !s.Grants.HasEntry(k) {
			bad(CtxTableLocations, "%q is not an entry of the grant list (%s)", k, s.Grants)
		}
	}
	s.validateS3Tables(bad)
	// The Glue Iceberg REST endpoint's warehouse is the catalog id (the
	// account id), not an S3 location ("warehouse" = "{aws_account_id}":
	// AWS Glue Developer Guide, "Connecting to the Data Catalog using AWS
	// Glue Iceberg REST endpoint",
	// https://docs.aws.amazon.com/glue/latest/dg/connect-glu-iceberg-rest.html),
	// so the tables' S3 locations need warehouseLocation (or
	// tableLocations).
	if s.CatalogType == "rest" && s.CatalogSigningName == "glue" && isS3URI(s.CatalogWarehouse) {
		bad(CtxCatalogWarehouse, "%q: the Glue Iceberg REST endpoint's warehouse is the catalog id (the account id, e.g. 123456789012), not an S3 location: put the S3 location in %s", s.CatalogWarehouse, CtxWarehouseLocation)
	}
	if s.Mode != ModeOff && !s.S3Tables() {
		if _, err := s.Locations(); err != nil {
			errs = append(errs, err)
		}
	}
	// Workgroup names: 1 to 128 of [a-zA-Z0-9._-] (Amazon Athena API
	// Reference, CreateWorkGroup, Name:
	// https://docs.aws.amazon.com/athena/latest/APIReference/API_CreateWorkGroup.html).
	if s.QuerySignals && s.Mode != ModeOff && len(s.AthenaWorkGroups) == 0 {
		bad(CtxAthenaWorkGroups, "empty: name the Athena workgroups whose queries are query signals (or set %s false)", CtxQuerySignals)
	}
	for _, w := range s.AthenaWorkGroups {
		if !athenaWorkGroup.MatchString(w) {
			bad(CtxAthenaWorkGroups, "%q: want an Athena workgroup name (1 to 128 of a-z A-Z 0-9 . _ -)", w)
		}
	}
	for _, k := range s.KMSKeyARNs {
		if !strings.HasPrefix(k, "arn:") || !strings.Contains(k, ":kms:") || !strings.Contains(k, ":key/") {
			bad(CtxKMSKeyARNs, "%q: want a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>); aliases cannot scope a policy", k)
		}
	}
	if s.EventBus == "" {
		bad(CtxEventBus, "must not be empty (use default)")
	}
	for key, v := range map[string]string{CtxSweepSchedule: s.SweepSchedule, CtxOrphanSchedule: s.OrphanSchedule, CtxSummarySchedule: s.SummarySchedule} {
		if !strings.HasPrefix(v, "rate(") && !strings.HasPrefix(v, "cron(") {
			bad(key, "%q: want rate(...) or cron(...)", v)
		}
	}
	for _, f := range []struct {
		key, tkey string
		fs        FunctionSettings
	}{{CtxPlannerMemory, CtxPlannerTimeout, s.Planner}, {CtxRewriterMemory, CtxRewriterTimeout, s.Rewriter}, {CtxCommitterMemory, CtxCommitterTimeout, s.Committer}} {
		if f.fs.MemoryMB < 128 || f.fs.MemoryMB > 10240 {
			bad(f.key, "%d: want 128 to 10240 MB", f.fs.MemoryMB)
		}
		if f.fs.Timeout < time.Second || f.fs.Timeout > 15*time.Minute || f.fs.Timeout%time.Second != 0 {
			bad(f.tkey, "%s: want whole seconds between 1s and 15m (Lambda's limit)", f.fs.Timeout)
		}
	}
	// A rewriter's memory grows with its group: one of 2 GiB
	// (ICEKEEPER_MAX_GROUP_BYTES) peaked at 456 MB RSS in a 448 MB
	// function, where Lambda would stop it on every delivery
	// (docs/PERFORMANCE.md, "Rewriter memory for groups of 1 and 2 GiB").
	// Below one vCPU a rewriter costs the same per GB and only takes
	// longer, so nothing is gained by going that low.
	if s.Rewriter.MemoryMB < MinRewriterMemoryMB {
		bad(CtxRewriterMemory, "%d: want at least %d MB: a rewriter of a 2 GiB group needs more than 448 MB", s.Rewriter.MemoryMB, MinRewriterMemoryMB)
	}
	if s.CommitTakeover <= s.Committer.Timeout {
		bad(CtxCommitTakeover, "%s must exceed %s (%s): a committer still running must never be taken over", s.CommitTakeover, CtxCommitterTimeout, s.Committer.Timeout)
	}
	// A task renews the job's term when it starts, and a failed one comes
	// back within rewrite.RetryDelay's 5-minute cap: the term must outlast
	// both. A crashed committer's job must be past the takeover window when
	// a planner can supersede its term, so the abort request it sends can
	// take the job over.
	// A rewriter that dies (its timeout, out of memory) answers nothing;
	// its heartbeat stops and its task comes back within
	// envvars.TaskHeartbeat: the job's term, renewed when the task
	// started, must outlast both, or the job starts over.
	if need := s.CrashedTaskReturn(); s.LeaseTTL <= need {
		bad(CtxLeaseTTL, "%s must exceed %s (%s) plus the task heartbeat (%s): a crashed rewriter's task would come back after the job lost its table, and the job would start over", s.LeaseTTL, CtxRewriterTimeout, s.Rewriter.Timeout, envvars.TaskHeartbeat)
	}
	if need := s.Rewriter.Timeout + 5*time.Minute; s.LeaseTTL <= need {
		bad(CtxLeaseTTL, "%s must exceed %s (%s) plus the 5m retry backoff cap (%s): a job would lose its table while a task or its retry still runs", s.LeaseTTL, CtxRewriterTimeout, s.Rewriter.Timeout, need)
	}
	if need := s.Committer.Timeout + s.CommitTakeover; s.LeaseTTL <= need {
		bad(CtxLeaseTTL, "%s must exceed %s plus %s (%s): a superseded job's abort request must find a crashed committer past its takeover window", s.LeaseTTL, CtxCommitterTimeout, CtxCommitTakeover, need)
	}
	if v := s.CommitVisibility(); v > 12*time.Hour {
		bad(CtxCommitTakeover, "the commit queue's visibility timeout would be %s, beyond SQS's 12h", v)
	}
	if s.RewriterEphemeralMB < 512 || s.RewriterEphemeralMB > 10240 {
		// docs.aws.amazon.com/lambda/latest/dg/API_EphemeralStorage.html
		bad(CtxRewriterEphemeral, "%d: want 512 to 10240 MB (Lambda's ephemeral storage range)", s.RewriterEphemeralMB)
	}
	if s.RewriterConcurrency < 2 || s.RewriterConcurrency > 1000 {
		bad(CtxRewriterConcurrency, "%d: want 2 to 1000 (the SQS event source's maximum concurrency)", s.RewriterConcurrency)
	}
	if s.RewriterReserved != 0 && s.RewriterReserved < s.RewriterConcurrency {
		bad(CtxRewriterReserved, "%d is below %s (%d): the poller would be throttled and throttled receives use up attempts; set it to 0 (none) or at least %d", s.RewriterReserved, CtxRewriterConcurrency, s.RewriterConcurrency, s.RewriterConcurrency)
	}
	// Throttled and unanswered receives count against maxReceiveCount, so
	// AWS recommends at least 5 on a Lambda event source's queue
	// (https://docs.aws.amazon.com/lambda/latest/dg/sqs-retries.html).
	if s.MaxTaskAttempts < MinTaskAttempts || s.MaxTaskAttempts > 1000 {
		bad(CtxMaxTaskAttempts, "%d: want %d to 1000 (SQS maxReceiveCount; AWS recommends at least %d for a Lambda event source, as throttled receives count too)", s.MaxTaskAttempts, MinTaskAttempts, MinTaskAttempts)
	}
	if s.JobsExpirationDays < 1 {
		bad(CtxJobsExpirationDays, "%d: want at least 1", s.JobsExpirationDays)
	}
	if s.MaintenanceLogDays < 1 {
		bad(CtxMaintenanceLogDays, "%d: want at least 1", s.MaintenanceLogDays)
	}
	if s.HealthExpirationDays < 1 {
		bad(CtxHealthExpirationDays, "%d: want at least 1", s.HealthExpirationDays)
	}
	if retention(s.LogRetentionDays) == "" {
		bad(CtxLogRetentionDays, "%d: want one of CloudWatch Logs' retention periods (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)", s.LogRetentionDays)
	}
	th := s.Thresholds
	for key, v := range map[string]int{CtxJobsFailedThreshold: th.JobsFailed, CtxJobsAbortedThreshold: th.JobsAborted, CtxCommitConflicts: th.CommitConflictsPerHour, CtxCommitRetries: th.CommitRetriesPerHour} {
		if v < 1 {
			bad(key, "%d: want at least 1", v)
		}
	}
	if th.DurationPercent < 1 || th.DurationPercent > 100 {
		bad(CtxDurationPercent, "%d: want 1 to 100", th.DurationPercent)
	}
	switch s.RemovalPolicy {
	case "retain", "destroy":
	default:
		bad(CtxRemovalPolicy, "%q: want retain or destroy", s.RemovalPolicy)
	}
	for _, k := range sortedKeys(s.Environment) {
		switch {
		case !knownEnv(k):
			bad(CtxEnvironment, "%s is not a variable icekeeper reads (see shared/config/config.go)", k)
		case managedEnv(k):
			bad(CtxEnvironment, "%s is set by the stack from its own setting; set that instead", k)
		}
	}
	// Lambda allows 4 KB of environment variables in all
	// (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html);
	// a long grant list moves to the code (GrantsInFile), the rest must fit.
	if size := s.environmentSize(false); size > LambdaEnvironmentLimit {
		bad(CtxEnvironment, "the functions' environment would take up to %d bytes, over Lambda's %d for all variables together: shorten %s or %s", size, LambdaEnvironmentLimit, CtxEnvironment, CtxCatalogProperties)
	}
	switch s.Architecture {
	case "arm64", "x86_64":
	default:
		bad(CtxArchitecture, "%q: want arm64 or x86_64", s.Architecture)
	}
	for _, fn := range Functions() {
		p := filepath.Join(s.AssetDir, fn, "bootstrap")
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			bad(CtxAssetDir, "%s not found: run `make lambdas` first (or point assetDir at a directory holding <function>/bootstrap)", p)
		}
	}
	return errors.Join(errs...)
}

// TaskVisibility is the task queue's visibility timeout: six times the
// rewriter's timeout (AWS's guidance for SQS event sources).
func (s Settings) TaskVisibility() time.Duration { return 6 * s.Rewriter.Timeout }

// CrashedTaskReturn is the latest a task comes back after its job's term
// was renewed (when the task started) if its rewriter dies without
// answering: the rewriter's timeout plus the heartbeat that keeps a
// running task invisible (envvars.TaskHeartbeat; the queue's own
// visibility timeout, TaskVisibility, only holds a message the event
// source received but has not handed to a rewriter yet).
func (s Settings) CrashedTaskReturn() time.Duration {
	return s.Rewriter.Timeout + envvars.TaskHeartbeat
}

// CommitVisibility is the commit queue's visibility timeout: six times the
// committer's timeout, and always longer than the commit takeover plus one
// committer run, so a redelivered commit request finds a silent job old
// enough to take over.
func (s Settings) CommitVisibility() time.Duration {
	return max(6*s.Committer.Timeout, s.CommitTakeover+s.Committer.Timeout)
}

// Warehouse is the S3 location the table location template starts from:
// WarehouseLocation, or CatalogWarehouse when that is an s3:// URI.
func (s Settings) Warehouse() string {
	if s.WarehouseLocation == "" && isS3URI(s.CatalogWarehouse) {
		return s.CatalogWarehouse
	}
	return s.WarehouseLocation
}

// TableAccess reports whether the mode gives the functions any access to
// tables at all.
func (s Settings) TableAccess() bool { return s.Mode != ModeOff }

// GlueCatalog reports whether the catalog is AWS Glue, natively or through
// its Iceberg REST endpoint (SigV4 signing name glue): the functions then
// need Glue permissions and Glue table state change events exist.
func (s Settings) GlueCatalog() bool {
	return s.CatalogType == "glue" || s.CatalogType == "rest" && s.CatalogSigV4 && s.CatalogSigningName == "glue"
}

// credentialShaped mirrors the rule icekeeper applies to table properties:
// keys naming a secret, password, token, key or credential are refused.
func credentialShaped(key string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(key), func(r rune) bool { return r == '.' || r == '-' || r == '_' }) {
		switch {
		case w == "key" || w == "keys" || strings.HasSuffix(w, "key") && w != "monkey":
			return true
		case strings.Contains(w, "secret"), strings.Contains(w, "password"), strings.Contains(w, "passwd"),
			strings.Contains(w, "token"), strings.Contains(w, "credential"):
			return true
		}
	}
	return false
}

func isS3URI(s string) bool {
	return strings.HasPrefix(s, "s3://") || strings.HasPrefix(s, "s3a://") || strings.HasPrefix(s, "s3n://")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
