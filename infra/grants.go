package main

import (
	"errors"
	"fmt"
	"github.com/icekeeper/icekeeper/shared/optin"
	"strings"
)

// ErrBadGrant means a grant list entry is malformed.
var ErrBadGrant = optin.ErrBadGrant

// Grants is the operator's grant list, parsed exactly as the functions
// parse ICEKEEPER_GRANTS: it is package optin's type. "ns" or "ns.*"
// grants a namespace ("a.b.*" a nested one), "ns.table" one table. The
// stack scopes every table permission to it.
type Grants = optin.Grants

// ParseGrants parses a comma-separated grant list.
func ParseGrants(s string) (Grants, error) { return optin.ParseGrants(s) }

// splitTable splits "a.b.table" into namespace "a.b" and table "table".
func splitTable(name string) (string, string) {
	i := strings.LastIndex(name, ".")
	return name[:i], name[i+1:]
}

// Location is where the tables of one grant entry live in S3. Key is the
// key of the table location without a trailing slash; for a namespace
// entry it ends in "*" and matches every table of the namespace.
type Location struct {
	Grant  string
	Bucket string
	Key    string
}

// Objects is the S3 object ARN pattern of sub under the location(s):
// Objects(p, "*") is every object, Objects(p, "data/*") the data files.
func (l Location) Objects(partition, sub string) string {
	return fmt.Sprintf("arn:%s:s3:::%s/%s/%s", partition, l.Bucket, l.Key, sub)
}

// ListPrefixes are the s3:prefix values a listing of the location may use.
func (l Location) ListPrefixes() []string {
	return []string{l.Key, l.Key + "/*"}
}

// MetadataKeyPattern is the EventBridge wildcard that matches the table
// metadata files written under the location.
func (l Location) MetadataKeyPattern() string { return l.Key + "/metadata/*.metadata.json" }

// GzipMetadataKeyPattern matches gzip-compressed metadata files named
// *.metadata.json.gz (iceberg-go and Java name them *.gz.metadata.json,
// which MetadataKeyPattern already matches).
func (l Location) GzipMetadataKeyPattern() string { return l.Key + "/metadata/*.metadata.json.gz" }

// Locations resolves every grant entry to its S3 location: the explicit
// tableLocations entry when there is one, otherwise the location template
// over the warehouse (a namespace entry puts "*" for the table). It fails,
// naming the grant, when an entry has no S3 location. A table bucket's
// tables have none the stack can know (S3 chooses them): it returns none.
func (s Settings) Locations() ([]Location, error) {
	if s.S3Tables() {
		return nil, nil
	}
	var out []Location
	var errs []error
	resolve := func(entry, ns, table string) {
		loc, explicit := s.TableLocations[entry]
		if !explicit && table == "*" {
			loc, explicit = s.TableLocations[ns]
		}
		switch {
		case explicit && table == "*":
			loc = strings.TrimSuffix(loc, "/") + "/*"
		case explicit:
		case strings.Contains(s.TableLocationTemplate, "{warehouse}") && s.Warehouse() == "":
			errs = append(errs, fmt.Errorf("%w: %s: grant %q has no S3 location: set %s (or an s3:// %s; with the Glue Iceberg REST endpoint %s is the account id, so set %s) or %s[%q]",
				ErrSettings, CtxTableLocations, entry, CtxWarehouseLocation, CtxCatalogWarehouse, CtxCatalogWarehouse, CtxWarehouseLocation, CtxTableLocations, entry))
			return
		default:
			loc = strings.NewReplacer(
				"{warehouse}", strings.TrimSuffix(s.Warehouse(), "/"),
				"{namespace}", ns,
				"{namespacePath}", strings.ReplaceAll(ns, ".", "/"),
				"{table}", table,
			).Replace(s.TableLocationTemplate)
		}
		bucket, key, err := splitS3(loc)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: grant %q: %v", ErrSettings, entry, err))
			return
		}
		out = append(out, Location{Grant: entry, Bucket: bucket, Key: key})
	}
	for _, ns := range s.Grants.Namespaces() {
		resolve(ns+".*", ns, "*")
	}
	for _, t := range s.Grants.Tables() {
		ns, table := splitTable(t)
		resolve(t, ns, table)
	}
	return out, errors.Join(errs...)
}

// Buckets lists the distinct buckets of locs, sorted.
func Buckets(locs []Location) []string {
	set := map[string]bool{}
	for _, l := range locs {
		set[l.Bucket] = true
	}
	return sortedKeys(set)
}

// splitS3 splits s3://bucket/key/path into its bucket and key (no
// surrounding slashes).
func splitS3(uri string) (string, string, error) {
	rest := uri
	for _, scheme := range []string{"s3://", "s3a://", "s3n://"} {
		rest = strings.TrimPrefix(rest, scheme)
	}
	if rest == uri {
		return "", "", fmt.Errorf("%q is not an s3:// location", uri)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	key = strings.Trim(key, "/")
	if bucket == "" || key == "" || strings.Contains(bucket, "*") {
		return "", "", fmt.Errorf("%q: want s3://bucket/path/to/table (a table location, not a bucket)", uri)
	}
	return bucket, key, nil
}
