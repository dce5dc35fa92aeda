package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
)

// The IAM scope of a large grant list.
//
// Every table permission names each granted table's ARNs (Glue, S3
// objects, S3 list prefixes, or an S3 Tables condition). A role's policies
// can hold about 70,000 characters (10,240 inline, 10 managed policies of
// 6,144: see limits.go), and the committer needs roughly 300 characters
// per granted table, so a few hundred granted tables are as many as IAM
// can name one by one. Beyond that the stack widens the IAM scope of the
// databases with the most table grants to the whole database (as if
// "db.*" were granted), until the policies fit, and says so at synthesis.
// The functions still enforce the grant list itself (package optin): a
// table of a widened database that was not granted is never maintained.
// Tables given an explicit tableLocations entry are never widened.

// tableScopeBudget is the most characters of table-scoped resources and
// conditions one role may carry, by tableScopeCost's estimate: 9 managed
// policies (the tenth place is AWSLambdaBasicExecutionRole's) packed to
// managedPolicyChars, less a quarter for the statements' own text
// (actions, Sids, conditions), the packing's waste and deploy-time values
// (an environment-agnostic stack's partition, region and account). So
// measured: 1,000 table grants, environment-agnostic, widen to 9 policies
// per role; 100 namespace grants fit unwidened.
const tableScopeBudget = (IAMManagedPerRoleLimit - 1) * managedPolicyChars * 3 / 4

// smallScopeChars is the most table-scoped characters a deployment keeps
// in each role's own (inline) policy, next to its own resources' 3,000 or
// so, as every deployment did before large ones existed.
const smallScopeChars = 5_000

// largeScope reports whether the table statements go to managed policies
// of their own (flush), since the role's inline policy cannot hold them.
func (s Settings) largeScope() bool { return s.tableScopeCost() > smallScopeChars }

// statementChunkChars bounds one statement's resources, so CDK can pack the
// statements into managed policies (it splits a role's policy by
// statement, never inside one).
const statementChunkChars = 1_000

// IAMScope returns the settings the IAM statements and the S3 rule are
// built from: s itself, or s with the table grants of the databases in
// widened replaced by their whole database, when naming every table would
// not fit IAM's policy quotas. It fails when even that does not fit.
func (s Settings) IAMScope() (scope Settings, widened []string, err error) {
	scope = s
	for scope.tableScopeCost() > tableScopeBudget {
		db := scope.widestDatabase()
		if db == "" {
			advice := "grant whole namespaces (ns.*) instead of their tables"
			if len(scope.Grants.Tables()) == 0 {
				// Namespace grants only: nothing narrower to widen from.
				advice = fmt.Sprintf("the %d granted namespaces alone do not fit: deploy them as several stacks (%s), each with part of the list", len(scope.Grants.Namespaces()), CtxStackName)
			}
			return s, widened, fmt.Errorf("%w: %s: the grant list needs about %d characters of IAM policy per function, more than IAM's quotas allow (%d managed policies of %d characters and %d inline per role): %s",
				ErrSettings, CtxGrants, scope.tableScopeCost(), IAMManagedPerRoleLimit, IAMManagedPolicyLimit, IAMInlinePerRoleLimit, advice)
		}
		entries := []string{db + ".*"}
		for _, e := range scope.Grants.Entries() {
			if ns, _, ok := tableEntry(e); ok && ns == db && !scope.explicitLocation(e) {
				continue
			}
			entries = append(entries, e)
		}
		g, perr := ParseGrants(strings.Join(entries, ","))
		if perr != nil {
			return s, widened, fmt.Errorf("%w: widen %s: %w", ErrSettings, db, perr)
		}
		scope.Grants = g
		widened = append(widened, db)
	}
	sort.Strings(widened)
	return scope, widened, nil
}

// tableEntry splits a table grant entry; ok is false for a namespace entry.
func tableEntry(entry string) (ns, table string, ok bool) {
	if strings.HasSuffix(entry, ".*") || !strings.Contains(entry, ".") {
		return "", "", false
	}
	ns, table = splitTable(entry)
	return ns, table, true
}

func (s Settings) explicitLocation(entry string) bool {
	_, ok := s.TableLocations[entry]
	return ok
}

// widestDatabase is the database with the most table grants that can be
// widened ("" when none can).
func (s Settings) widestDatabase() string {
	counts := map[string]int{}
	for _, t := range s.Grants.Tables() {
		if ns, _, ok := tableEntry(t); ok && !s.explicitLocation(t) {
			counts[ns]++
		}
	}
	best := ""
	for _, db := range sortedKeys(counts) {
		if best == "" || counts[db] > counts[best] {
			best = db
		}
	}
	return best
}

// tableScopeCost estimates the characters of table-scoped resources and
// conditions of the function with the most of them, as a large deployment
// writes them (the rewriter and the committer): per location its object
// ARNs in three statements (read; metadata/ delete or write and delete;
// data/ write and delete) and two list prefixes; per Glue grant entry its
// ARN in one statement (the rewriter's reads, the committer's commit) and
// its database's; per S3 Tables grant entry one conditioned statement.
func (s Settings) tableScopeCost() int {
	cost := 0
	if s.S3Tables() {
		return len(s.Grants.Entries()) * 260
	}
	locs, _ := s.Locations()
	for _, l := range locs {
		arn := len("arn:aws-us-gov:s3:::") + len(l.Bucket) + 1 + len(l.Key) + len("/metadata/*") + 3
		cost += 3*arn + 2*(len(l.Key)+6)
	}
	if s.GlueCatalog() {
		for _, e := range s.Grants.Entries() {
			cost += len("arn:aws-us-gov:glue:ap-southeast-4:123456789012:table//") + len(e) + 3
		}
		for _, db := range s.Grants.Databases() {
			cost += len("arn:aws-us-gov:glue:ap-southeast-4:123456789012:database/") + len(db) + 3
		}
	}
	return cost
}

// chunk splits resources into runs of at most statementChunkChars
// characters (at least one resource each).
func chunk(resources []string) [][]string {
	var out [][]string
	var cur []string
	size := 0
	for _, r := range resources {
		if len(cur) > 0 && size+len(r)+3 > statementChunkChars {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, r)
		size += len(r) + 3
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// statements is statement over resources split into chunks: the first
// keeps sid, the others get sid2, sid3, ...
func statements(sid string, actions, resources []string) []awsiam.PolicyStatement {
	var out []awsiam.PolicyStatement
	for i, c := range chunk(resources) {
		id := sid
		if i > 0 {
			id = fmt.Sprintf("%s%d", sid, i+1)
		}
		out = append(out, statement(id, actions, c))
	}
	return out
}
