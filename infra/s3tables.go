package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// S3 Tables: a table bucket as the warehouse.
//
// The catalog is the S3 Tables Iceberg REST endpoint
// (https://s3tables.<region>.amazonaws.com/iceberg), its warehouse the
// table bucket's ARN, and its requests are SigV4-signed with the signing
// name s3tables (Amazon S3 User Guide, "Accessing tables using the Amazon
// S3 Tables Iceberg REST endpoint"). Each table's files live at a location
// S3 chooses (s3://<id>--table-s3, "Tables in S3 table buckets"), reached
// with the S3 object API but authorized by s3tables: actions on the table's
// ARN (arn:<partition>:s3tables:<region>:<account>:bucket/<name>/table/<id>):
// s3tables:GetTableData for GetObject and HeadObject, s3tables:PutTableData
// for PutObject and multipart uploads ("Access management for S3 Tables").
// A table's ARN carries its id, not its name, so a grant is scoped with the
// condition keys s3tables:namespace and s3tables:tableName on
// bucket/<name>/table/* (the Service Authorization Reference's condition
// keys for S3 Tables; the User Guide's "Resource-based policies for S3
// Tables" scopes s3tables:GetTableData to a namespace this way).
//
// What a table bucket does not offer, and what icekeeper does instead:
//   - no DeleteObject and no listing ("Supported Amazon S3 object-level
//     API operations for S3 Tables"): a failed attempt's files are left to
//     the bucket's unreferenced file removal (shared/outputs), so no
//     function gets a delete permission;
//   - no S3 object events: the sweep schedule and custom commit events
//     wake the planner;
//   - namespaces and table names are one level of [0-9a-z_] (the S3 Tables
//     API Reference's patterns), so nested namespace grants are refused.
//
// No function gets s3tables:DeleteTable, nor any wildcard action.

var tableBucketARN = regexp.MustCompile(`^arn:(aws[a-z-]*):s3tables:([a-z0-9-]+):([0-9]{12}):bucket/([a-z0-9_-]{3,63})$`)

// s3tablesName is the pattern of an S3 Tables namespace or table name.
var s3tablesName = regexp.MustCompile(`^[0-9a-z_]{1,255}$`)

// S3 Tables actions, by what they allow (Service Authorization Reference,
// "Actions, resources, and condition keys for Amazon S3 Tables").
var (
	// On the table bucket: the REST endpoint's GET /v1/config, at every
	// catalog start, reads the bucket; the planner's sweep lists tables.
	s3tablesConfig = "s3tables:GetTableBucket"
	s3tablesList   = "s3tables:ListTables"
	// On the granted tables: load a table through the catalog (its
	// metadata location).
	s3tablesLoad = "s3tables:GetTableMetadataLocation"
	// Read a table's objects (GetObject, HeadObject).
	s3tablesDataRead = "s3tables:GetTableData"
	// Write a table's objects (PutObject, multipart uploads): data files,
	// and the committer's manifests and manifest lists.
	s3tablesDataWrite = "s3tables:PutTableData"
	// Commit: swap the table's metadata location.
	s3tablesCommit = "s3tables:UpdateTableMetadataLocation"
)

// TableBucket is a table bucket named by the catalog warehouse.
type TableBucket struct {
	ARN, Partition, Region, Account, Name string
}

// TableBucket returns the table bucket the catalog warehouse names, if it
// is a table bucket ARN.
func (s Settings) TableBucket() (TableBucket, bool) {
	m := tableBucketARN.FindStringSubmatch(s.CatalogWarehouse)
	if m == nil {
		return TableBucket{}, false
	}
	return TableBucket{ARN: m[0], Partition: m[1], Region: m[2], Account: m[3], Name: m[4]}, true
}

// S3Tables reports whether the warehouse is an S3 table bucket.
func (s Settings) S3Tables() bool {
	_, ok := s.TableBucket()
	return ok
}

// validateS3Tables checks the settings of an S3 Tables warehouse, and that
// nothing else claims S3 Tables.
func (s Settings) validateS3Tables(bad func(key, format string, args ...any)) {
	tb, ok := s.TableBucket()
	if !ok {
		if strings.Contains(s.CatalogWarehouse, ":s3tables:") {
			bad(CtxCatalogWarehouse, "%q: want a table bucket ARN, arn:aws:s3tables:<region>:<account>:bucket/<name>", s.CatalogWarehouse)
		}
		if s.CatalogSigningName == "s3tables" && s.TableAccess() {
			bad(CtxCatalogWarehouse, "%q: the S3 Tables endpoint (signing name s3tables) takes the table bucket's ARN as its warehouse", s.CatalogWarehouse)
		}
		return
	}
	endpoint := fmt.Sprintf("https://s3tables.%s.amazonaws.com/iceberg", tb.Region)
	if s.CatalogType != "rest" {
		bad(CtxCatalogType, "%q: a table bucket is reached through its Iceberg REST endpoint: set catalogType rest, catalogUri %s, catalogSigV4 true, catalogSigningName s3tables", s.CatalogType, endpoint)
	}
	if s.CatalogURI == "" && s.Mode != ModeOff {
		bad(CtxCatalogURI, "a table bucket's catalog is its Iceberg REST endpoint: set %s", endpoint)
	}
	if !s.CatalogSigV4 || s.CatalogSigningName != "s3tables" {
		bad(CtxCatalogSigningName, "%q (sigv4 %t): the S3 Tables endpoint needs SigV4 with the signing name s3tables", s.CatalogSigningName, s.CatalogSigV4)
	}
	if s.CatalogSigningRegion != "" && s.CatalogSigningRegion != tb.Region {
		bad(CtxCatalogSigningRegion, "%q: the table bucket is in %s", s.CatalogSigningRegion, tb.Region)
	}
	if s.WarehouseLocation != "" || len(s.TableLocations) > 0 {
		bad(CtxTableLocations, "a table bucket chooses its tables' locations: leave %s and %s empty", CtxWarehouseLocation, CtxTableLocations)
	}
	for _, ns := range s.Grants.Namespaces() {
		if !s3tablesName.MatchString(ns) {
			bad(CtxGrants, "namespace %q: S3 Tables namespaces are one level of [0-9a-z_]", ns)
		}
	}
	for _, t := range s.Grants.Tables() {
		ns, name := splitTable(t)
		if !s3tablesName.MatchString(ns) || !s3tablesName.MatchString(name) {
			bad(CtxGrants, "table %q: S3 Tables namespaces and table names are one level of [0-9a-z_]", t)
		}
	}
}

// s3tablesBucket allows actions on the table bucket itself, or nothing
// when the warehouse is not a table bucket.
func (a *access) s3tablesBucket(sid string, actions []string) []awsiam.PolicyStatement {
	tb, ok := a.s.TableBucket()
	if !ok {
		return nil
	}
	return []awsiam.PolicyStatement{statement(sid, actions, []string{tb.ARN})}
}

// s3tablesListing allows listing the tables of the granted namespaces
// only (the planner's sweep over a namespace grant): ListTables is
// authorized on the table bucket with the condition key
// s3tables:namespace (Service Authorization Reference, "Actions,
// resources, and condition keys for Amazon S3 Tables", ListTables:
// https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3tables.html).
// Nothing when no namespace is granted: table grants need no listing.
func (a access) s3tablesListing(sid string) []awsiam.PolicyStatement {
	tb, ok := a.s.TableBucket()
	nss := a.s.Grants.Namespaces()
	if !ok || len(nss) == 0 {
		return nil
	}
	st := statement(sid, []string{s3tablesList}, []string{tb.ARN})
	st.AddCondition(jsii.String("StringEquals"), map[string]any{"s3tables:namespace": nss})
	return []awsiam.PolicyStatement{st}
}

// s3tablesTables allows actions on the granted tables of the table bucket:
// one statement for the granted namespaces (s3tables:namespace), and one
// per granted table (s3tables:namespace and s3tables:tableName together,
// since two lists in one condition would also allow their cross product).
func (a *access) s3tablesTables(sid string, actions []string) []awsiam.PolicyStatement {
	tb, ok := a.s.TableBucket()
	if !ok {
		return nil
	}
	tables := tb.ARN + "/table/*"
	var out []awsiam.PolicyStatement
	if nss := a.s.Grants.Namespaces(); len(nss) > 0 {
		st := statement(sid+"Namespaces", actions, []string{tables})
		st.AddCondition(jsii.String("StringEquals"), map[string]any{"s3tables:namespace": nss})
		out = append(out, st)
	}
	for i, t := range a.s.Grants.Tables() {
		ns, name := splitTable(t)
		st := statement(fmt.Sprintf("%sTable%d", sid, i), actions, []string{tables})
		st.AddCondition(jsii.String("StringEquals"), map[string]any{"s3tables:namespace": ns, "s3tables:tableName": name})
		out = append(out, st)
	}
	return out
}
