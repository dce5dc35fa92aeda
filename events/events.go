// Package events decodes the events that wake the planner into one form: the
// tables to plan and why.
//
// Accepted (EventBridge envelopes):
//   - "Scheduled Event" from aws.events: a sweep over the granted tables.
//     With detail.icekeeper_action "orphans" (the constant input of the
//     stack's orphan schedule rule; a real schedule event's detail is {}),
//     an orphan cleanup sweep instead: orphan cleanup runs on its own
//     schedule, never on commit events. With "summary" (the weekly
//     summary rule's constant input), the week's summary (package
//     summary) instead.
//   - "Glue Data Catalog Table State Change" from aws.glue: detail.databaseName
//     is the namespace, detail.tableName the table, detail.typeOfChange the
//     Glue API call (UpdateTable wakes the table; partition calls such as
//     CreatePartition or BatchUpdatePartition, which an Iceberg table's
//     commits never make, are noise and wake nothing).
//   - "Glue Data Catalog Database State Change" from aws.glue:
//     detail.databaseName and detail.changedTables; CreateTable wakes each
//     table, DeleteTable, BatchDeleteTable, CreateDatabase and
//     DeleteDatabase wake nothing.
//     Both Glue shapes are AWS's: the AWS Glue Developer Guide, "Automating
//     AWS Glue with EventBridge", and the CDK's generated event classes
//     (aws_glue.events.GlueDataCatalogTableStateChange: changedPartitions,
//     databaseName, tableName, typeOfChange;
//     GlueDataCatalogDatabaseStateChange: changedTables, databaseName,
//     typeOfChange).
//   - "Object Created" from aws.s3 (S3 EventBridge notifications) for a key
//     ending in /metadata/<name>.metadata.json (or .metadata.json.gz): a
//     commit through any catalog that writes table metadata to S3. The table
//     location is the key's prefix before /metadata/; the planner resolves it
//     to a table.
//   - "Iceberg Table Committed" from icekeeper (the custom commit event other
//     catalogs or writers can put on the bus): detail.namespace (a string,
//     dotted for nested namespaces, or a list of levels) and detail.table.
//   - "Icekeeper Compaction Continues" from icekeeper (put on the bus by
//     icekeeper's committer when a compaction it committed left groups for
//     a next job, Continuation): detail.namespace and detail.table as the
//     commit event's, detail.job_id, detail.deferred_groups,
//     detail.deferred_bytes. It wakes the table as a commit event does; the
//     committer reopened the table's cooldown first, so the next job is
//     planned at once. The committer puts the same event, with
//     detail.resume_after (the committed job's kind) and no groups
//     deferred, after a compaction, delete-file rewrite or manifest
//     rewrite: the planner then plans only the actions after that one in
//     the maintenance chain (the snapshot expiry that frees what the job
//     replaced), without claiming the table's cooldown again.
//   - "Icekeeper Query Observed" from icekeeper (the query signal any
//     engine can put on the bus, docs/FORMATS.md): detail.namespace and
//     detail.table as the commit event's, detail.columns (the filtered
//     columns, each {"column", "predicate"}), detail.bytes_scanned,
//     detail.rows_returned, detail.engine. It wakes no planning: the
//     planner records it (package signals).
//   - "Icekeeper Weekly Summary" from icekeeper (the planner's own weekly
//     summary, package summary): well-formed, and it wakes nothing (a
//     broad rule on source icekeeper may route it here).
//   - "Athena Query State Change" from aws.athena: detail.queryExecutionId,
//     detail.currentState, detail.statementType (Amazon Athena User Guide,
//     "Monitor Athena query events with EventBridge"). A SUCCEEDED DML
//     query is looked up and turned into query signals (signals.Athena);
//     any other state or statement is ignored.
//
// A well-formed event that needs no work (a Glue partition change, a
// dropped table) decodes to a Trigger with no table and Ignored saying why.
// Anything else, or a malformed event, is rejected with ErrRejected and a
// message saying why; the planner logs and counts it and never retries it.
// The JSON files beside this file are real-shaped samples of each event,
// used by the tests and by `icekeeper invoke planner --event`.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	lambdaevents "github.com/aws/aws-lambda-go/events"
)

// ErrRejected means the event is malformed or not one the planner handles.
// It is terminal: retrying the same event cannot succeed.
var ErrRejected = errors.New("events: rejected")

// Kinds of trigger.
const (
	KindSchedule = "schedule"
	KindGlue     = "glue_table_state_change"
	KindGlueDB   = "glue_database_state_change"
	KindS3       = "s3_metadata_object_created"
	KindCommit   = "icekeeper_commit"
	// KindContinue is a compaction's next job, announced by the committer.
	KindContinue = "icekeeper_continue"
	// KindOrphanSchedule is the orphan cleanup sweep.
	KindOrphanSchedule = "orphan_schedule"
	// KindSummarySchedule is the weekly summary's run, KindSummary the
	// summary's own event (ignored).
	KindSummarySchedule = "summary_schedule"
	KindSummary         = "icekeeper_weekly_summary"
	// KindQuery is a query signal, KindAthena an Athena query to look up.
	KindQuery  = "icekeeper_query_observed"
	KindAthena = "athena_query_state_change"
)

// ActionOrphans is the detail.icekeeper_action of the orphan schedule's
// events.
const ActionOrphans = "orphans"

// ActionSummary is the detail.icekeeper_action of the weekly summary
// rule's events.
const ActionSummary = "summary"

// Detail types and sources.
const (
	DetailTypeSchedule = "Scheduled Event"
	SourceSchedule     = "aws.events"
	DetailTypeGlue     = "Glue Data Catalog Table State Change"
	DetailTypeGlueDB   = "Glue Data Catalog Database State Change"
	SourceGlue         = "aws.glue"
	DetailTypeS3       = "Object Created"
	SourceS3           = "aws.s3"
	DetailTypeCommit   = "Iceberg Table Committed"
	SourceCommit       = "icekeeper"
	DetailTypeQuery    = "Icekeeper Query Observed"
	DetailTypeContinue = "Icekeeper Compaction Continues"
	DetailTypeSummary  = "Icekeeper Weekly Summary"
	DetailTypeAthena   = "Athena Query State Change"
	SourceAthena       = "aws.athena"
)

// Trigger is a decoded event.
type Trigger struct {
	Kind string `json:"kind"`
	// Tables are dotted table names ("ns.table"). Empty for a sweep, whose
	// tables come from configuration.
	Tables []string `json:"tables,omitempty"`
	// Locations are table locations ("s3://bucket/path/table") whose
	// metadata changed; the planner resolves them to tables.
	Locations []string `json:"locations,omitempty"`
	// Sweep means: visit every granted table.
	Sweep bool `json:"sweep,omitempty"`
	// ID is the event id, for logs.
	ID string `json:"id,omitempty"`
	// Ignored says why a well-formed event names no table to visit (for
	// example a Glue partition change); empty otherwise.
	Ignored string `json:"ignored,omitempty"`
	// Query is a query signal's observation (KindQuery): Tables holds its
	// one table.
	Query *Query `json:"query,omitempty"`
	// AthenaQueryID is the Athena query to look up (KindAthena).
	AthenaQueryID string `json:"athena_query_id,omitempty"`
	// ContinuesJob is the committed job whose compaction the trigger
	// continues (KindContinue), for logs.
	ContinuesJob string `json:"continues_job,omitempty"`
	// ResumeAfter is the kind of the committed job (KindContinue) after
	// which the maintenance chain resumes: the planner plans only the
	// actions that come after it (a compaction is followed by the
	// delete-file rewrite, the manifest rewrite and the snapshot expiry
	// that are due). Empty: the compaction itself continues (groups were
	// deferred), and the chain starts from its beginning.
	ResumeAfter string `json:"resume_after,omitempty"`
}

// Query is the detail of an "Icekeeper Query Observed" event, less the
// table's name.
type Query struct {
	Columns      []QueryColumn `json:"columns"`
	BytesScanned int64         `json:"bytes_scanned"`
	RowsReturned int64         `json:"rows_returned"`
	Engine       string        `json:"engine,omitempty"`
	QueryID      string        `json:"query_id,omitempty"`
	// Partitions are the partitions the query read, each field=value of
	// the table's partition fields (region=eu, or ts_day=2026-12-01), as
	// icekeeper's health report names them; none for a query over the
	// whole table.
	Partitions []string `json:"partitions,omitempty"`
	// Class is the query's workload class: agent, dashboard, pipeline or
	// adhoc (package workload; anything else, or none, counts as adhoc).
	Class string `json:"class,omitempty"`
}

// QueryColumn is one filtered column: its name and the kind of predicate
// (eq, in, range, is_null, prefix, other).
type QueryColumn struct {
	Column    string `json:"column"`
	Predicate string `json:"predicate"`
}

// glueDetail is the detail of both Glue Data Catalog state change events:
// the table event carries tableName (and changedPartitions), the database
// event changedTables.
type glueDetail struct {
	DatabaseName      string   `json:"databaseName"`
	TableName         string   `json:"tableName"`
	ChangedTables     []string `json:"changedTables"`
	ChangedPartitions []string `json:"changedPartitions"`
	TypeOfChange      string   `json:"typeOfChange"`
}

// Glue API calls whose events wake a table: a commit through the Glue
// catalog is an UpdateTable (the new metadata location); a new table may be
// worth a first look.
var glueWakes = map[string]bool{"UpdateTable": true, "CreateTable": true}

// Decode decodes one EventBridge event.
func Decode(raw []byte) (Trigger, error) {
	var ev lambdaevents.CloudWatchEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return Trigger{}, fmt.Errorf("%w: not an EventBridge event: %v", ErrRejected, err)
	}
	switch {
	case ev.DetailType == DetailTypeSchedule && ev.Source == SourceSchedule:
		var d struct {
			Action string `json:"icekeeper_action"`
		}
		if len(ev.Detail) > 0 {
			if err := json.Unmarshal(ev.Detail, &d); err != nil {
				return Trigger{}, fmt.Errorf("%w: scheduled event detail: %v", ErrRejected, err)
			}
		}
		switch d.Action {
		case "":
			return Trigger{Kind: KindSchedule, Sweep: true, ID: ev.ID}, nil
		case ActionOrphans:
			return Trigger{Kind: KindOrphanSchedule, Sweep: true, ID: ev.ID}, nil
		case ActionSummary:
			return Trigger{Kind: KindSummarySchedule, Sweep: true, ID: ev.ID}, nil
		default:
			return Trigger{}, fmt.Errorf("%w: scheduled event with unknown icekeeper_action %q", ErrRejected, d.Action)
		}
	case (ev.DetailType == DetailTypeGlue || ev.DetailType == DetailTypeGlueDB) && ev.Source == SourceGlue:
		return decodeGlue(ev)
	case ev.DetailType == DetailTypeS3 && ev.Source == SourceS3:
		return decodeS3(ev)
	case ev.DetailType == DetailTypeCommit && ev.Source == SourceCommit:
		return decodeCommit(ev)
	case ev.DetailType == DetailTypeContinue && ev.Source == SourceCommit:
		return decodeContinue(ev)
	case ev.DetailType == DetailTypeQuery && ev.Source == SourceCommit:
		return decodeQuery(ev)
	case ev.DetailType == DetailTypeSummary && ev.Source == SourceCommit:
		return Trigger{Kind: KindSummary, ID: ev.ID, Ignored: "the weekly summary is icekeeper's own report: it wakes no table"}, nil
	case ev.DetailType == DetailTypeAthena && ev.Source == SourceAthena:
		return decodeAthena(ev)
	case ev.DetailType == "" && ev.Source == "":
		return Trigger{}, fmt.Errorf("%w: event has no source or detail-type", ErrRejected)
	default:
		return Trigger{}, fmt.Errorf("%w: unsupported event %q from %q", ErrRejected, ev.DetailType, ev.Source)
	}
}

func decodeGlue(ev lambdaevents.CloudWatchEvent) (Trigger, error) {
	kind, what := KindGlue, "glue table event"
	if ev.DetailType == DetailTypeGlueDB {
		kind, what = KindGlueDB, "glue database event"
	}
	var d glueDetail
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return Trigger{}, fmt.Errorf("%w: %s %s: bad detail: %v", ErrRejected, what, ev.ID, err)
	}
	if strings.TrimSpace(d.DatabaseName) == "" {
		return Trigger{}, fmt.Errorf("%w: %s %s: detail.databaseName is empty", ErrRejected, what, ev.ID)
	}
	if strings.TrimSpace(d.TypeOfChange) == "" {
		return Trigger{}, fmt.Errorf("%w: %s %s: detail.typeOfChange is empty", ErrRejected, what, ev.ID)
	}
	names := d.ChangedTables
	if kind == KindGlue {
		if strings.TrimSpace(d.TableName) == "" {
			return Trigger{}, fmt.Errorf("%w: %s %s: detail.tableName is empty", ErrRejected, what, ev.ID)
		}
		names = []string{d.TableName}
	} else if len(names) == 0 && glueWakes[d.TypeOfChange] {
		return Trigger{}, fmt.Errorf("%w: %s %s: detail.changedTables is empty", ErrRejected, what, ev.ID)
	}
	seen := map[string]bool{}
	var tables []string
	for _, t := range names {
		t = strings.TrimSpace(t)
		if t == "" || strings.Contains(t, ".") {
			return Trigger{}, fmt.Errorf("%w: %s %s: bad table name %q", ErrRejected, what, ev.ID, t)
		}
		name := d.DatabaseName + "." + t
		if !seen[name] {
			seen[name] = true
			tables = append(tables, name)
		}
	}
	sort.Strings(tables)
	if !glueWakes[d.TypeOfChange] {
		return Trigger{Kind: kind, ID: ev.ID, Ignored: fmt.Sprintf("glue %s of %s changes no table's data", d.TypeOfChange, strings.Join(tables, ", "))}, nil
	}
	return Trigger{Kind: kind, Tables: tables, ID: ev.ID}, nil
}

type s3Detail struct {
	Bucket struct {
		Name string `json:"name"`
	} `json:"bucket"`
	Object struct {
		Key string `json:"key"`
	} `json:"object"`
}

func decodeS3(ev lambdaevents.CloudWatchEvent) (Trigger, error) {
	var d s3Detail
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return Trigger{}, fmt.Errorf("%w: s3 event %s: bad detail: %v", ErrRejected, ev.ID, err)
	}
	if d.Bucket.Name == "" || d.Object.Key == "" {
		return Trigger{}, fmt.Errorf("%w: s3 event %s: detail.bucket.name or detail.object.key is empty", ErrRejected, ev.ID)
	}
	key := d.Object.Key
	if k, err := url.QueryUnescape(key); err == nil {
		key = k // S3 notifications URL-encode keys
	}
	i := strings.LastIndex(key, "/metadata/")
	name := ""
	if i > 0 {
		name = key[i+len("/metadata/"):]
	}
	if i <= 0 || strings.Contains(name, "/") || !(strings.HasSuffix(name, ".metadata.json") || strings.HasSuffix(name, ".metadata.json.gz") || strings.HasSuffix(name, ".gz.metadata.json")) {
		return Trigger{}, fmt.Errorf("%w: s3 event %s: s3://%s/%s is not a table metadata file (*/metadata/*.metadata.json)", ErrRejected, ev.ID, d.Bucket.Name, key)
	}
	return Trigger{Kind: KindS3, Locations: []string{"s3://" + d.Bucket.Name + "/" + key[:i]}, ID: ev.ID}, nil
}

type commitDetail struct {
	Namespace json.RawMessage `json:"namespace"`
	Table     string          `json:"table"`
}

// tableOf reads detail.namespace (a string, dotted for nested
// namespaces, or a list of levels) and detail.table into a dotted name.
func tableOf(what, id string, d commitDetail) (string, error) {
	var levels []string
	var single string
	switch {
	case len(d.Namespace) == 0:
	case json.Unmarshal(d.Namespace, &single) == nil:
		levels = strings.Split(single, ".")
	case json.Unmarshal(d.Namespace, &levels) == nil:
	default:
		return "", fmt.Errorf("%w: %s %s: detail.namespace must be a string or a list of strings", ErrRejected, what, id)
	}
	if len(levels) == 0 || strings.TrimSpace(d.Table) == "" {
		return "", fmt.Errorf("%w: %s %s: detail.namespace and detail.table are required", ErrRejected, what, id)
	}
	for _, l := range append(levels, d.Table) {
		if strings.TrimSpace(l) == "" || strings.Contains(l, ".") {
			return "", fmt.Errorf("%w: %s %s: bad name %q (names and namespace levels cannot be empty or contain dots)", ErrRejected, what, id, l)
		}
	}
	return strings.Join(levels, ".") + "." + d.Table, nil
}

func decodeCommit(ev lambdaevents.CloudWatchEvent) (Trigger, error) {
	var d commitDetail
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return Trigger{}, fmt.Errorf("%w: commit event %s: bad detail: %v", ErrRejected, ev.ID, err)
	}
	name, err := tableOf("commit event", ev.ID, d)
	if err != nil {
		return Trigger{}, err
	}
	return Trigger{Kind: KindCommit, Tables: []string{name}, ID: ev.ID}, nil
}

// Continuation is the detail of an "Icekeeper Compaction Continues" event:
// the committer committed job JobID of the table, which either left
// DeferredGroups groups (DeferredBytes input bytes) for the next job of its
// compaction, or (ResumeAfter, the job's kind) leaves the rest of the
// maintenance chain to run after it.
type Continuation struct {
	// Namespace is the table's namespace, one entry per level.
	Namespace      []string `json:"namespace"`
	Table          string   `json:"table"`
	JobID          string   `json:"job_id"`
	DeferredGroups int      `json:"deferred_groups"`
	DeferredBytes  int64    `json:"deferred_bytes"`
	// ResumeAfter is the committed job's kind when the chain resumes
	// after it (Trigger.ResumeAfter); omitted when the compaction itself
	// continues.
	ResumeAfter string `json:"resume_after,omitempty"`
}

// NewContinuation is the detail for the committed job jobID of the table
// ident (its namespace levels, then its name: messages.TableIdent), which
// left groups (bytes) for the next job.
func NewContinuation(ident []string, jobID string, groups int, bytes int64) (Continuation, error) {
	if len(ident) < 2 {
		return Continuation{}, fmt.Errorf("events: continuation of %q: want namespace.table", strings.Join(ident, "."))
	}
	return Continuation{Namespace: ident[:len(ident)-1], Table: ident[len(ident)-1], JobID: jobID, DeferredGroups: groups, DeferredBytes: bytes}, nil
}

// NewChainContinuation is the detail for the committed job jobID of kind
// after, whose table's maintenance chain resumes after it.
func NewChainContinuation(ident []string, jobID, after string) (Continuation, error) {
	c, err := NewContinuation(ident, jobID, 0, 0)
	if err == nil && strings.TrimSpace(after) == "" {
		err = fmt.Errorf("events: continuation of %s: the kind of job the chain resumes after is required", strings.Join(ident, "."))
	}
	c.ResumeAfter = after
	return c, err
}

// CommitDetail is the detail of an "Iceberg Table Committed" event that
// icekeeper itself puts on its bus (a wake-up's visit, package wakeup):
// the namespace as a list of levels, and the table.
type CommitDetail struct {
	Namespace []string `json:"namespace"`
	Table     string   `json:"table"`
}

// NewCommitDetail is the commit event detail naming the table ident
// (namespace levels, then the table).
func NewCommitDetail(ident []string) CommitDetail {
	if len(ident) == 0 {
		return CommitDetail{}
	}
	return CommitDetail{Namespace: ident[:len(ident)-1], Table: ident[len(ident)-1]}
}

func decodeContinue(ev lambdaevents.CloudWatchEvent) (Trigger, error) {
	var d struct {
		commitDetail
		JobID       string `json:"job_id"`
		ResumeAfter string `json:"resume_after"`
	}
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return Trigger{}, fmt.Errorf("%w: continuation event %s: bad detail: %v", ErrRejected, ev.ID, err)
	}
	name, err := tableOf("continuation event", ev.ID, d.commitDetail)
	if err != nil {
		return Trigger{}, err
	}
	if strings.TrimSpace(d.JobID) == "" {
		return Trigger{}, fmt.Errorf("%w: continuation event %s: detail.job_id is required", ErrRejected, ev.ID)
	}
	return Trigger{Kind: KindContinue, Tables: []string{name}, ID: ev.ID, ContinuesJob: d.JobID, ResumeAfter: strings.TrimSpace(d.ResumeAfter)}, nil
}

// predicates are the predicate kinds a query signal may name.
var predicates = map[string]bool{"eq": true, "in": true, "range": true, "is_null": true, "prefix": true, "other": true}

func decodeQuery(ev lambdaevents.CloudWatchEvent) (Trigger, error) {
	var d struct {
		commitDetail
		Query
	}
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return Trigger{}, fmt.Errorf("%w: query event %s: bad detail: %v", ErrRejected, ev.ID, err)
	}
	name, err := tableOf("query event", ev.ID, d.commitDetail)
	if err != nil {
		return Trigger{}, err
	}
	if d.BytesScanned < 0 || d.RowsReturned < 0 {
		return Trigger{}, fmt.Errorf("%w: query event %s: bytes_scanned and rows_returned cannot be negative", ErrRejected, ev.ID)
	}
	for _, c := range d.Columns {
		if strings.TrimSpace(c.Column) == "" || !predicates[c.Predicate] {
			return Trigger{}, fmt.Errorf("%w: query event %s: column %q with predicate %q: want a column and one of eq, in, range, is_null, prefix, other", ErrRejected, ev.ID, c.Column, c.Predicate)
		}
	}
	for _, p := range d.Partitions {
		if k, v, ok := strings.Cut(p, "="); !ok || strings.TrimSpace(k) == "" || v == "" || len(p) > 256 {
			return Trigger{}, fmt.Errorf("%w: query event %s: partition %q: want field=value (at most 256 characters)", ErrRejected, ev.ID, p)
		}
	}
	q := d.Query
	return Trigger{Kind: KindQuery, Tables: []string{name}, ID: ev.ID, Query: &q}, nil
}

func decodeAthena(ev lambdaevents.CloudWatchEvent) (Trigger, error) {
	var d struct {
		CurrentState     string `json:"currentState"`
		StatementType    string `json:"statementType"`
		QueryExecutionID string `json:"queryExecutionId"`
	}
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return Trigger{}, fmt.Errorf("%w: athena event %s: bad detail: %v", ErrRejected, ev.ID, err)
	}
	if strings.TrimSpace(d.QueryExecutionID) == "" {
		return Trigger{}, fmt.Errorf("%w: athena event %s: detail.queryExecutionId is empty", ErrRejected, ev.ID)
	}
	if d.CurrentState != "SUCCEEDED" || d.StatementType != "DML" {
		return Trigger{Kind: KindAthena, ID: ev.ID, Ignored: fmt.Sprintf("athena query %s is %s (%s): only succeeded DML queries are signals", d.QueryExecutionID, d.CurrentState, d.StatementType)}, nil
	}
	return Trigger{Kind: KindAthena, ID: ev.ID, AthenaQueryID: d.QueryExecutionID}, nil
}
