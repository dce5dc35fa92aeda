package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// The IAM model (infra/README.md, "Who may do what"):
//
//   - icekeeper's own resources, in every mode: the planner writes plans,
//     task payloads and health reports to the bucket, sends to both queues,
//     reads and writes both tables and puts audit events on the bus; a
//     rewriter reads task payloads, writes and removes its descriptors,
//     reads and writes both tables and sends to the commit queue; the
//     committer reads plans and descriptors, writes and removes an
//     expiry's record of the files it frees, and reads and writes both
//     tables. The event sources add receive/delete on each consumer's queue.
//   - tables, never in mode off, and only within the granted namespaces and
//     tables: the planner (advisory and active) reads catalog metadata and
//     the objects under the granted locations; in mode active a rewriter
//     also writes under the locations' data/ folder, and removes its own
//     partial or losing files there (and has no catalog permission at
//     all), and the committer reads, writes table metadata under
//     metadata/, deletes under data/ (losing and failed attempts' files)
//     and, for a snapshot expiry, under data/ and metadata/ the files only
//     expired snapshots used, and is the only function that may update
//     the catalog.
//   - with an S3 table bucket as warehouse the same, through s3tables:
//     actions scoped by namespace and table name, and without any delete
//     (s3tables.go).
//   - nobody can run a query (Athena, Redshift Data): with query signals
//     on, the planner may only read an Athena query's execution
//     (athena:GetQueryExecution, on the account's workgroups) to learn
//     what it filtered on. Nobody gets a resource "*" for Glue or S3, or a
//     wildcard action.

// Actions.
var (
	// stateActions are the DynamoDB calls the code makes on the lease and
	// job tables (TransactWriteItems is authorized per contained action).
	stateActions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
		"dynamodb:Query", "dynamodb:ConditionCheckItem"}

	// glue:GetCatalog: the Glue Iceberg REST endpoint requires it for every
	// call, /v1/config at catalog start included (AWS Glue Developer Guide,
	// "AWS Glue REST APIs for Apache Iceberg specifications").
	glueRead   = []string{"glue:GetCatalog", "glue:GetDatabase", "glue:GetTable", "glue:GetTables"}
	glueUpdate = []string{"glue:UpdateTable"}
	// glueWalk: orphan cleanup refuses a location another table's files
	// may lie in, and proves there is none by reading every table's
	// location and write paths (shared/orphans, Shared): the catalog's
	// databases and tables, metadata only, never a table's data.
	glueWalk = []string{"glue:GetCatalog", "glue:GetDatabases", "glue:GetDatabase", "glue:GetTables", "glue:GetTable"}
)

// access builds and attaches the policy statements of the three functions.
type access struct {
	stack     awscdk.Stack
	s         Settings
	locs      []Location
	partition string
	// large: table statements go to managed policies (largeScope).
	large   bool
	pending map[string][]awsiam.PolicyStatement
}

// grantAccess attaches every function's statements. s is the IAM scope
// (Settings.IAMScope): the settings, with the grants of some databases
// widened when a large grant list would not fit IAM's quotas otherwise.
func grantAccess(stack awscdk.Stack, s Settings, st Storage, q Queues, fns Lambdas, bus string) error {
	a := &access{stack: stack, s: s, partition: *stack.Partition(), large: s.largeScope(), pending: map[string][]awsiam.PolicyStatement{}}
	if s.TableAccess() {
		locs, err := s.Locations()
		if err != nil {
			return err
		}
		a.locs = locs
	}
	a.ownResources(st, q, fns, bus)
	if !s.TableAccess() {
		return nil
	}
	defer a.flush(fns)
	// With CatalogWalk (a Glue catalog) the planner and the committer may
	// already read every database and table; a large deployment leaves the
	// per-table copy of those reads out, so its policies fit IAM's quotas.
	if !a.large {
		a.table(fns.Planner, a.glue("CatalogRead", glueRead)...)
	}
	a.table(fns.Planner, a.glueCatalogWalk("CatalogWalk")...)
	a.table(fns.Planner, a.s3tablesBucket("TableBucketRead", []string{s3tablesConfig})...)
	a.table(fns.Planner, a.s3tablesListing("TablesList")...)
	a.table(fns.Planner, a.s3tablesTables("TablesRead", []string{s3tablesLoad, s3tablesDataRead})...)
	a.table(fns.Planner, a.tableObjects("TableRead", []string{"s3:GetObject"}, "*")...)
	a.table(fns.Planner, a.tableListing("TableList")...)
	a.table(fns.Planner, a.kms("WarehouseKeyRead", "kms:Decrypt")...)
	if s.QuerySignals {
		// The Service Authorization Reference for Athena
		// (docs.aws.amazon.com/service-authorization/latest/reference/list_amazonathena.html)
		// lists the query-execution reads with the required resource type
		// workgroup*, and the API reference for GetQueryExecution says it
		// answers "if you have access to the workgroup in which the query
		// ran"; the workgroup ARN is arn:${Partition}:athena:${Region}:${Account}:workgroup/${WorkGroupName}.
		// Only the configured workgroups: every workgroup would expose
		// every query's text in the account.
		var wgs []string
		for _, w := range s.AthenaWorkGroups {
			wgs = append(wgs, fmt.Sprintf("arn:%s:athena:%s:%s:workgroup/%s", a.partition, *stack.Region(), *stack.Account(), w))
		}
		add(fns.Planner, statement("AthenaQueryRead", []string{"athena:GetQueryExecution"}, wgs))
	}
	if s.Mode != ModeActive {
		return nil
	}
	a.table(fns.Rewriter, a.tableObjects("TableRead", []string{"s3:GetObject"}, "*")...)
	// A rewriter removes its own partial and losing output (files named with
	// its attempt id) under the same data/ prefix it writes.
	a.table(fns.Rewriter, a.tableObjects("TableDataWrite", []string{"s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"}, "data/*")...)
	// Deletion tasks delete what an expiry freed or an orphan cleanup
	// found, under metadata/ too.
	a.table(fns.Rewriter, a.tableObjects("TableMetadataDelete", []string{"s3:DeleteObject"}, "metadata/*")...)
	a.table(fns.Rewriter, a.metadataFilesKept("TableMetadataFilesKept")...)
	a.table(fns.Rewriter, a.tableListing("TableList")...)
	// Deletion and listing tasks check their files against the table as
	// the catalog has it when they run (shared/deletions, shared/listing):
	// read only, never an update.
	a.table(fns.Rewriter, a.glue("CatalogRead", glueRead)...)
	// Rewriters open the pinned metadata file and write data files; a
	// table bucket deletes nothing on request (its unreferenced file
	// removal does), so they get no delete there.
	a.table(fns.Rewriter, a.s3tablesTables("TablesReadWrite", []string{s3tablesDataRead, s3tablesDataWrite})...)
	a.table(fns.Rewriter, a.kms("WarehouseKeyReadWrite", "kms:Decrypt", "kms:GenerateDataKey")...)
	if !a.large {
		a.table(fns.Committer, a.glue("CatalogRead", glueRead)...)
	}
	a.table(fns.Committer, a.glue("CatalogCommit", glueUpdate)...)
	a.table(fns.Committer, a.glueCatalogWalk("CatalogWalk")...)
	a.table(fns.Committer, a.s3tablesBucket("TableBucketRead", []string{s3tablesConfig})...)
	a.table(fns.Committer, a.s3tablesTables("TablesCommit", []string{s3tablesLoad, s3tablesDataRead, s3tablesDataWrite, s3tablesCommit})...)
	a.table(fns.Committer, a.tableObjects("TableRead", []string{"s3:GetObject"}, "*")...)
	// Writes under data/: the delete files that rebase deletes committed
	// during a compaction onto its new files (shared/commit/rebase.go).
	// Deletes under data/: losing and failed attempts' files; and, for a
	// snapshot expiry, the data and delete files, manifests, manifest lists
	// and statistics files only expired snapshots used (data/ and
	// metadata/).
	if a.large {
		// The same permissions, with one copy of the metadata/ ARNs.
		a.table(fns.Committer, a.tableObjects("TableMetadataWriteDelete", []string{"s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"}, "metadata/*")...)
	} else {
		a.table(fns.Committer, a.tableObjects("TableMetadataWrite", []string{"s3:PutObject", "s3:AbortMultipartUpload"}, "metadata/*")...)
	}
	a.table(fns.Committer, a.tableObjects("TableDataWriteDelete", []string{"s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"}, "data/*")...)
	if !a.large {
		a.table(fns.Committer, a.tableObjects("TableMetadataDelete", []string{"s3:DeleteObject"}, "metadata/*")...)
	}
	a.table(fns.Committer, a.metadataFilesKept("TableMetadataFilesKept")...)
	a.table(fns.Committer, a.tableListing("TableList")...)
	a.table(fns.Committer, a.kms("WarehouseKeyReadWrite", "kms:Decrypt", "kms:GenerateDataKey")...)
	return nil
}

// table attaches table-scoped statements: to the role's own policy, or in
// a large deployment (largeScope) to the managed policies flush packs.
func (a *access) table(fn awslambda.Function, stmts ...awsiam.PolicyStatement) {
	if !a.large {
		add(fn, stmts...)
		return
	}
	id := *fn.Node().Id()
	a.pending[id] = append(a.pending[id], stmts...)
}

// managedPolicyChars is how full flush packs a managed policy, by the
// statements' JSON with deploy-time values at their longest: below IAM's
// 6,144 characters with room for the policy's own frame.
const managedPolicyChars = 5_900

// flush packs each function's pending table statements into managed
// policies of at most managedPolicyChars, attached to its role: first fit,
// largest statement first (the order of statements means nothing to IAM).
func (a *access) flush(fns Lambdas) {
	for _, fn := range []awslambda.Function{fns.Planner, fns.Rewriter, fns.Committer} {
		id := *fn.Node().Id()
		type sized struct {
			st   awsiam.PolicyStatement
			size int
		}
		var all []sized
		for _, st := range a.pending[id] {
			// Measured as CheckLimits measures it: resolved, deploy-time
			// values at their longest.
			raw, _ := json.Marshal(resolveUpper(a.stack.Resolve(st.ToStatementJson())))
			all = append(all, sized{st, len(raw) + 1})
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].size > all[j].size })
		var bins [][]awsiam.PolicyStatement
		var fill []int
		for _, s := range all {
			placed := false
			for i := range bins {
				if fill[i]+s.size <= managedPolicyChars {
					bins[i], fill[i], placed = append(bins[i], s.st), fill[i]+s.size, true
					break
				}
			}
			if !placed {
				bins, fill = append(bins, []awsiam.PolicyStatement{s.st}), append(fill, s.size)
			}
		}
		for i := range bins {
			awsiam.NewManagedPolicy(a.stack, jsii.String(fmt.Sprintf("%sTableAccess%d", id, i+1)), &awsiam.ManagedPolicyProps{
				Description: jsii.String(fmt.Sprintf("icekeeper %s: table permissions, part %d", strings.ToLower(id), i+1)),
				Statements:  &bins[i],
				Roles:       &[]awsiam.IRole{fn.Role()},
			})
		}
	}
}

// metadataFiles are the object patterns, under a location, of table
// metadata files (plain and compressed, as Iceberg Java and iceberg-go
// name them: *.metadata.json, *.gz.metadata.json, *.metadata.json.gz and
// zstd) and of a version hint: what shared/orphans never takes for an
// orphan (metadataFile).
var metadataFiles = []string{"*.metadata.json", "*.metadata.json.gz", "*.metadata.json.zstd", "*version-hint.text"}

// metadataFilesKept denies deleting any table metadata file in the
// warehouse buckets. IAM cannot name the table's current metadata file
// (it changes with every commit), but icekeeper deletes none of them:
// expiry frees manifests, manifest lists, statistics and data files, and
// orphan cleanup keeps metadata files however old (shared/orphans). An
// explicit Deny overrides every Allow, the functions' own
// metadata/* deletes included (IAM User Guide, "Policy evaluation
// logic":
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html),
// and the Resource element's * matches across slashes (IAM User Guide,
// "IAM JSON policy elements: Resource":
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html),
// so a metadata file at any depth is covered. The Deny is on every
// warehouse bucket, not per location: icekeeper deletes no metadata file
// anywhere, and a deployment with many grants keeps four ARNs per bucket.
func (a access) metadataFilesKept(sid string) []awsiam.PolicyStatement {
	var resources []string
	for _, b := range Buckets(a.locs) {
		for _, m := range metadataFiles {
			resources = append(resources, fmt.Sprintf("arn:%s:s3:::%s/%s", a.partition, b, m))
		}
	}
	if len(resources) == 0 {
		return nil
	}
	st := statement(sid, []string{"s3:DeleteObject"}, resources)
	st.SetEffect(awsiam.Effect_DENY)
	return []awsiam.PolicyStatement{st}
}

// kms allows actions on the warehouse's KMS keys (SSE-KMS), when any are
// configured: reading an SSE-KMS object needs kms:Decrypt, writing one
// kms:GenerateDataKey (Amazon S3 User Guide, "Using server-side
// encryption with AWS KMS keys").
func (a *access) kms(sid string, actions ...string) []awsiam.PolicyStatement {
	if len(a.s.KMSKeyARNs) == 0 {
		return nil
	}
	return []awsiam.PolicyStatement{statement(sid, actions, a.s.KMSKeyARNs)}
}

func add(fn awslambda.Function, stmts ...awsiam.PolicyStatement) {
	for _, st := range stmts {
		fn.AddToRolePolicy(st)
	}
}

func statement(sid string, actions, resources []string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String(sid),
		Effect:    awsiam.Effect_ALLOW,
		Actions:   jsii.Strings(actions...),
		Resources: jsii.Strings(resources...),
	})
}

// ownResources grants what each function needs of icekeeper's own bucket,
// tables, queues and bus.
func (a *access) ownResources(st Storage, q Queues, fns Lambdas, bus string) {
	bucket := *st.Bucket.BucketArn()
	jobs := bucket + "/" + a.s.key(JobsPrefix) + "*"
	health := bucket + "/" + a.s.key(HealthPrefix) + "*"
	descriptors := bucket + "/" + a.s.key(JobsPrefix) + "*/descriptors/*"
	rowMaps := bucket + "/" + a.s.key(JobsPrefix) + "*/rowmaps/*"
	joblog := bucket + "/" + a.s.key(LogPrefix) + "*"
	deletionParts := bucket + "/" + a.s.key(JobsPrefix) + "*/deletions/*"
	listingMarkers := bucket + "/" + a.s.key(JobsPrefix) + "*/listing/*"
	foundObjects := bucket + "/" + a.s.key(JobsPrefix) + "*/found/*"
	refusedParts := bucket + "/" + a.s.key(JobsPrefix) + "*/refused/*"
	exchangePages := bucket + "/" + a.s.key(JobsPrefix) + "*/exchange/*"
	for _, fn := range []awslambda.Function{fns.Planner, fns.Rewriter, fns.Committer} {
		add(fn, statement("StateReadWrite", stateActions, []string{*st.LeaseTable.TableArn(), *st.JobsTable.TableArn()}))
	}
	locations := bucket + "/" + a.s.key(LocationsPrefix) + "*"
	sweeps := bucket + "/" + a.s.key(SweepsPrefix) + "*"
	add(fns.Planner,
		statement("PlansAndReportsWrite", []string{"s3:PutObject"}, []string{jobs, health}),
		// The index of the granted tables' locations: the sweep writes
		// it, an S3 event's location is looked up in it.
		statement("LocationIndexReadWrite", []string{"s3:GetObject", "s3:PutObject"}, []string{locations}),
		// The sweeps' cursors: where a sweep that ran short of time
		// stopped, read by the next.
		statement("SweepCursorsReadWrite", []string{"s3:GetObject", "s3:PutObject"}, []string{sweeps}),
		statement("AuditEvents", []string{"events:PutEvents"}, []string{a.busARN(bus)}),
	)
	// The weekly summary (shared/summary): it reads the maintenance log
	// and the latest health reports, lists them by prefix (which also
	// tells a missing report from a denied read, package blob), and
	// writes summary/ only. The dispatcher reads a table's latest health
	// report too, before writing another (shared/trigger: only a changed
	// one is written).
	add(fns.Planner,
		statement("SummaryWrite", []string{"s3:PutObject"}, []string{bucket + "/" + a.s.key(SummaryPrefix) + "*"}),
		statement("SummaryInputsRead", []string{"s3:GetObject"}, []string{joblog, health}),
		a.prefixListing("SummaryInputsList", bucket, a.s.key(LogPrefix), a.s.key(HealthPrefix)),
	)
	q.Tasks.GrantSendMessages(fns.Planner)
	q.Commits.GrantSendMessages(fns.Planner)
	add(fns.Rewriter,
		statement("TasksRead", []string{"s3:GetObject"}, []string{jobs}),
		// A group's descriptor and its row map (shared/rowmap).
		statement("DescriptorsWrite", []string{"s3:PutObject", "s3:DeleteObject"}, []string{descriptors, rowMaps}),
		// A deletion task removes its part of the record once done, and
		// lists the parts left (shared/deletions).
		statement("DeletionPartsRemove", []string{"s3:DeleteObject"}, []string{deletionParts}),
		a.jobFoldersListing("DeletionPartsList", bucket, "deletions"),
		// An orphan cleanup's deletion task that must refuse records it
		// for the committer, which ends the job failed (shared/deletions).
		statement("RefusedPartsWrite", []string{"s3:PutObject"}, []string{refusedParts}),
		// A listing task of an orphan cleanup writes what it found, removes
		// its marker and lists the markers left (shared/listing).
		statement("ListingFindingsWrite", []string{"s3:PutObject"}, []string{foundObjects}),
		statement("ListingMarkersRemove", []string{"s3:DeleteObject"}, []string{listingMarkers}),
		a.jobFoldersListing("ListingMarkersList", bucket, "listing"),
		// A two-stage sort's map writes its sorted rows as scratch pages,
		// which the reduces read (shared/exchange).
		statement("ExchangePagesWrite", []string{"s3:PutObject"}, []string{exchangePages}),
	)
	q.Commits.GrantSendMessages(fns.Rewriter)
	add(fns.Committer, statement("PlansAndDescriptorsRead", []string{"s3:GetObject"}, []string{jobs}))
	// A compaction that left groups for later jobs announces its next one
	// (the planner's ContinueEvents rule, infra/events.go).
	if a.s.TableAccess() {
		add(fns.Committer, statement("ContinueEvents", []string{"events:PutEvents"}, []string{a.busARN(bus)}))
	}
	// The maintenance log: one record per job (shared/joblog).
	add(fns.Committer, statement("MaintenanceLogWrite", []string{"s3:PutObject"}, []string{joblog}))
	// An expiry's durable record of the files it frees, removed part by
	// part as they are deleted (shared/commit/expiry.go).
	add(fns.Committer, statement("ExpiryRecordsWrite", []string{"s3:PutObject", "s3:DeleteObject"}, []string{bucket + "/" + a.s.key(JobsPrefix) + "*/deletions*"}),
		a.jobFoldersListing("DeletionPartsList", bucket, "deletions", "refused"))
	// An orphan cleanup's fanned-out listing: its record and markers, and
	// what the prefixes found, which a committer taking over lists itself
	// (shared/commit/orphans.go).
	add(fns.Committer, statement("ListingRecordsWrite", []string{"s3:PutObject", "s3:DeleteObject"}, []string{bucket + "/" + a.s.key(JobsPrefix) + "*/listing*", foundObjects}),
		a.jobFoldersListing("ListingFoldersList", bucket, "listing", "found"))
	// The committer reads a job's deletions and listing records and learns
	// from their absence that it is the first to run the step
	// (shared/commit/expiry.go, orphans.go). S3 answers a GetObject of a
	// missing key with 404 only to a caller that has s3:ListBucket on the
	// bucket, 403 AccessDenied otherwise (Amazon S3 API Reference,
	// GetObject, "Permissions":
	// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html);
	// the docs do not say how a ListBucket limited by s3:prefix counts
	// there, so package blob confirms a 403 with a listing whose prefix is
	// the key itself (the condition key s3:prefix of s3:ListBucket, Amazon
	// S3 User Guide, "Bucket policy examples using condition keys":
	// https://docs.aws.amazon.com/AmazonS3/latest/userguide/amazon-s3-policy-keys.html),
	// which this statement allows for exactly those two keys of any job.
	add(fns.Committer, a.jobKeysListing("JobRecordsProbe", bucket, "deletions.json", "listing.json"))
	// A two-stage sort's scratch pages, removed when its job ends
	// (shared/commit/exchange.go).
	add(fns.Committer, statement("ExchangePagesRemove", []string{"s3:DeleteObject"}, []string{exchangePages}),
		a.jobFoldersListing("ExchangePagesList", bucket, "exchange"))
	// Large deletions go to the rewriters as tasks, and a two-stage
	// sort's reduces.
	q.Tasks.GrantSendMessages(fns.Committer)
}

// glue returns a statement allowing actions on the catalog, the granted
// databases and the granted tables (a namespace grant: every table of its
// database), or nothing when the catalog is not Glue.
// glueCatalogWalk allows reading every database's and table's metadata
// of the Glue catalog (glueWalk), for orphan cleanup's proof that no other
// table lies in the location it cleans.
func (a *access) glueCatalogWalk(sid string) []awsiam.PolicyStatement {
	if !a.s.GlueCatalog() {
		return nil
	}
	arn := a.glueARN()
	return []awsiam.PolicyStatement{statement(sid, glueWalk, []string{arn("catalog"), arn("database/*"), arn("table/*/*")})}
}

// glueARN builds ARNs of the configured Glue catalog's resources.
func (a *access) glueARN() func(resource string) string {
	region, account := *a.stack.Region(), *a.stack.Account()
	if r := a.s.CatalogProperties["glue.region"]; r != "" {
		region = r
	}
	if id := a.s.CatalogProperties["glue.id"]; id != "" {
		account = id
	}
	return func(resource string) string {
		return fmt.Sprintf("arn:%s:glue:%s:%s:%s", a.partition, region, account, resource)
	}
}

func (a *access) glue(sid string, actions []string) []awsiam.PolicyStatement {
	if !a.s.GlueCatalog() {
		return nil
	}
	arn := a.glueARN()
	resources := []string{arn("catalog")}
	for _, db := range a.s.Grants.Databases() {
		resources = append(resources, arn("database/"+db))
	}
	for _, ns := range a.s.Grants.Namespaces() {
		resources = append(resources, arn("table/"+ns+"/*"))
	}
	for _, t := range a.s.Grants.Tables() {
		ns, name := splitTable(t)
		resources = append(resources, arn("table/"+ns+"/"+name))
	}
	return statements(sid, actions, resources)
}

// tableObjects allows actions on sub (an object pattern such as "*" or
// "data/*") under every granted location.
func (a *access) tableObjects(sid string, actions []string, sub string) []awsiam.PolicyStatement {
	if len(a.locs) == 0 {
		return nil
	}
	resources := make([]string, 0, len(a.locs))
	for _, l := range a.locs {
		resources = append(resources, l.Objects(a.partition, sub))
	}
	return statements(sid, actions, resources)
}

// tableListing allows listing each warehouse bucket, only under the granted
// locations (s3:prefix).
func (a *access) tableListing(sid string) []awsiam.PolicyStatement {
	var out []awsiam.PolicyStatement
	for i, b := range Buckets(a.locs) {
		var prefixes []string
		for _, l := range a.locs {
			if l.Bucket == b {
				prefixes = append(prefixes, l.ListPrefixes()...)
			}
		}
		for j, part := range chunk(prefixes) {
			id := fmt.Sprintf("%s%d", sid, i)
			if j > 0 {
				id = fmt.Sprintf("%s%dPart%d", sid, i, j+1)
			}
			st := statement(id, []string{"s3:ListBucket"}, []string{fmt.Sprintf("arn:%s:s3:::%s", a.partition, b)})
			st.AddCondition(jsii.String("StringLike"), map[string]any{"s3:prefix": part})
			out = append(out, st)
		}
	}
	return out
}

// jobFoldersListing allows listing icekeeper's bucket only in the given
// folders of a job (jobs/<id>/<folder>/): the parts of a deletions record,
// the markers and findings of a fanned-out listing.
func (a *access) jobFoldersListing(sid, bucket string, folders ...string) awsiam.PolicyStatement {
	st := statement(sid, []string{"s3:ListBucket"}, []string{bucket})
	var prefixes []string
	for _, f := range folders {
		p := a.s.key(JobsPrefix) + "*/" + f + "/"
		prefixes = append(prefixes, p, p+"*")
	}
	st.AddCondition(jsii.String("StringLike"), map[string]any{"s3:prefix": prefixes})
	return st
}

// prefixListing allows listing icekeeper's bucket only under the given
// prefixes.
func (a access) prefixListing(sid, bucket string, prefixes ...string) awsiam.PolicyStatement {
	st := statement(sid, []string{"s3:ListBucket"}, []string{bucket})
	var ps []string
	for _, p := range prefixes {
		ps = append(ps, p+"*")
	}
	st.AddCondition(jsii.String("StringLike"), map[string]any{"s3:prefix": ps})
	return st
}

// jobKeysListing allows listing icekeeper's bucket only with a prefix
// that is exactly one of the given objects of a job (jobs/<id>/<name>):
// the listing that tells a missing record from a denied read.
func (a access) jobKeysListing(sid, bucket string, names ...string) awsiam.PolicyStatement {
	st := statement(sid, []string{"s3:ListBucket"}, []string{bucket})
	var prefixes []string
	for _, n := range names {
		prefixes = append(prefixes, a.s.key(JobsPrefix)+"*/"+n)
	}
	st.AddCondition(jsii.String("StringLike"), map[string]any{"s3:prefix": prefixes})
	return st
}

// busARN is the ARN of ICEKEEPER_EVENT_BUS (a name or an ARN).
func (a *access) busARN(bus string) string { return eventBusARN(a.stack, bus) }

// eventBusARN is the ARN of the bus named bus (a name or an ARN) in the
// stack's account and region.
func eventBusARN(stack awscdk.Stack, bus string) string {
	if strings.HasPrefix(bus, "arn:") {
		return bus
	}
	return fmt.Sprintf("arn:%s:events:%s:%s:event-bus/%s", *stack.Partition(), *stack.Region(), *stack.Account(), bus)
}
