package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/shared/envvars"
)

// scaleGrants are the grant lists of a deployment of 1,000 tables in 100
// databases (10 tables each): by namespace, by table, and mixed (the first
// 50 databases by namespace, the other 500 tables one by one).
func scaleGrants() map[string]string {
	var byNamespace, byTable, mixed []string
	for d := 0; d < 100; d++ {
		db := fmt.Sprintf("db%03d", d)
		byNamespace = append(byNamespace, db+".*")
		if d < 50 {
			mixed = append(mixed, db+".*")
		}
		for t := 0; t < 10; t++ {
			table := fmt.Sprintf("%s.table_%03d", db, t)
			byTable = append(byTable, table)
			if d >= 50 {
				mixed = append(mixed, table)
			}
		}
	}
	return map[string]string{
		"by namespace": strings.Join(byNamespace, ","),
		"by table":     strings.Join(byTable, ","),
		"mixed":        strings.Join(mixed, ","),
		// make preview's case: no account or region known at synthesis.
		"by table, environment-agnostic": strings.Join(byTable, ","),
	}
}

// synthScale synthesizes an active Glue deployment with grants and returns
// the fixture and the template as the CLI writes it.
func synthScale(t *testing.T, grants string, agnostic bool) (*fixture, map[string]any, []byte) {
	t.Helper()
	return synthScaleIn(t, activeContext(), grants, agnostic)
}

// synthScaleIn is synthScale from another base context (S3 Tables).
func synthScaleIn(t *testing.T, ctx map[string]any, grants string, agnostic bool) (*fixture, map[string]any, []byte) {
	t.Helper()
	ctx[CtxGrants] = grants
	ctx[ctxTestAgnostic] = agnostic
	f := mustSynth(t, ctx)
	raw, err := json.Marshal(f.tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	// The CDK writes templates indented by one space.
	indented, err := json.MarshalIndent(tpl, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return f, tpl, indented
}

// TestIcekeeperStack_1000TablesIn100DatabasesFitEveryAWSLimit: a
// deployment of 1,000 tables, granted by namespace, by table or mixed,
// synthesizes within IAM's policy quotas (a managed policy 6,144
// characters, a role's inline policies 10,240, 10 managed policies per
// role: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html,
// https://repost.aws/knowledge-center/iam-increase-policy-size), Lambda's
// 4 KB of environment variables
// (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)
// and CloudFormation's template quotas (1 MB through S3, 500 resources:
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html),
// with deploy-time names and ARNs counted at their longest.
func TestIcekeeperStack_1000TablesIn100DatabasesFitEveryAWSLimit(t *testing.T) {
	for name, grants := range scaleGrants() {
		t.Run(name, func(t *testing.T) {
			f, tpl, indented := synthScale(t, grants, strings.Contains(name, "agnostic"))
			checks := CheckLimits(tpl, indented)
			kinds := map[string]int{}
			for _, c := range checks {
				kinds[strings.Fields(c.What)[0]+" "+strings.Fields(c.What)[1]]++
				if !c.OK() {
					t.Errorf("%s", c)
				}
			}
			// Every kind of limit was measured: 3 functions' environments,
			// 3 roles' inline policies and attachment counts, the template.
			if kinds["Lambda environment"] < 3 || kinds["EventBridge event"] < 3 || kinds["EventBridge wildcard"] < 1 || kinds["IAM inline"] < 3 || kinds["IAM managed"] < 3 || kinds["CloudFormation template"] != 1 || kinds["CloudFormation resources"] != 1 {
				t.Fatalf("measured %v", kinds)
			}
			// make preview prints the same checks and passes.
			path := filepath.Join(t.TempDir(), "template.json")
			if err := os.WriteFile(path, indented, 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := printLimits(&out, path); err != nil || !strings.Contains(out.String(), "IAM managed policies attached to role") || !strings.Contains(out.String(), "CloudFormation resources") {
				t.Fatalf("preview's limits: %v\n%s", err, out.String())
			}
			// Every table's location is still reachable by some statement:
			// the committer may write metadata under each granted table.
			settings, err := settingsFrom(t, map[string]any{CtxMode: "active", CtxGrants: grants, CtxCatalogWarehouse: "s3://lake/warehouse", CtxAssetDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), "bootstrap") {
				// settingsFrom validates the bootstraps too; only that may fail here.
				if err != nil {
					t.Fatal(err)
				}
			}
			settings.Grants, _ = ParseGrants(grants)
			committer := strings.Join(f.tableResources(t, "Committer"), " ")
			for _, entry := range settings.Grants.Entries() {
				ns, table := entry, "*"
				if !strings.HasSuffix(entry, ".*") {
					ns, table = splitTable(entry)
				} else {
					ns = strings.TrimSuffix(entry, ".*")
				}
				exact := "lake/warehouse/" + ns + ".db/" + table + "/metadata/*"
				widened := "lake/warehouse/" + ns + ".db/*/metadata/*"
				if !strings.Contains(committer, exact) && !strings.Contains(committer, widened) {
					t.Fatalf("no committer statement covers %s", entry)
				}
			}
		})
	}
}

// TestIcekeeperStack_ALongGrantListShipsInTheCode: 1,000 table grants do
// not fit Lambda's 4 KB environment, so every function gets
// ICEKEEPER_GRANTS_FILE=grants.txt and the list in its code package, in
// a form package config reads back (envvars.GrantsFromFile) as exactly the
// granted list; a short list stays in ICEKEEPER_GRANTS.
func TestIcekeeperStack_ALongGrantListShipsInTheCode(t *testing.T) {
	grants := scaleGrants()["by table"]
	f, _, _ := synthScale(t, grants, false)
	for _, fn := range []string{"Planner", "Rewriter", "Committer"} {
		_, p := f.function(t, fn)
		vars, _ := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[envvars.GrantsFile] != GrantsFileName || vars[envvars.Grants] != nil {
			t.Fatalf("%s: %s=%v %s=%v, want the grant list in %s", fn, envvars.GrantsFile, vars[envvars.GrantsFile], envvars.Grants, vars[envvars.Grants], GrantsFileName)
		}
	}
	s := DefaultSettings()
	s.Mode, s.CatalogWarehouse = ModeActive, "s3://lake/warehouse"
	s.AssetDir = t.TempDir()
	writeBootstraps(t, s.AssetDir)
	var err error
	if s.Grants, err = ParseGrants(grants); err != nil {
		t.Fatal(err)
	}
	if !s.GrantsInFile() {
		t.Fatal("1,000 table grants stay in the environment")
	}
	dir, err := s.codeDir(Rewriter)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	raw, err := os.ReadFile(filepath.Join(dir, GrantsFileName))
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseGrants(envvars.GrantsFromFile(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != s.Grants.String() || len(back.Tables()) != 1000 {
		t.Fatalf("the shipped grant list reads back as %d tables, want the 1,000 granted", len(back.Tables()))
	}
	if _, err := os.Stat(filepath.Join(dir, "bootstrap")); err != nil {
		t.Fatalf("the code package lost its bootstrap: %v", err)
	}
	small := DefaultSettings()
	small.Grants, _ = ParseGrants("analytics.*,sales.orders")
	if small.GrantsInFile() {
		t.Fatal("a two-entry grant list left the environment")
	}
}

// TestSettings_IAMScopeWidensTheLargestDatabasesOnly: 1,000 table grants
// widen the databases with the most table grants, never a table with an
// explicit tableLocations entry (its location is not under its
// database's), the summary names the widened databases, and a grant list
// small enough is left exactly as granted.
func TestSettings_IAMScopeWidensTheLargestDatabasesOnly(t *testing.T) {
	s := DefaultSettings()
	s.Mode, s.CatalogWarehouse = ModeActive, "s3://lake/warehouse"
	var err error
	if s.Grants, err = ParseGrants(scaleGrants()["by table"] + ",odd.one"); err != nil {
		t.Fatal(err)
	}
	s.TableLocations = map[string]string{"db000.table_000": "s3://elsewhere/orders", "odd.one": "s3://elsewhere/one"}
	scope, widened, err := s.IAMScope()
	if err != nil {
		t.Fatal(err)
	}
	if len(widened) == 0 || scope.tableScopeCost() > tableScopeBudget {
		t.Fatalf("widened %v, cost %d: want some databases widened to within %d", widened, scope.tableScopeCost(), tableScopeBudget)
	}
	for _, must := range []string{"db000.table_000", "odd.one"} {
		if !scope.Grants.HasEntry(must) {
			t.Fatalf("%s (an explicit location) was widened away: %s", must, scope.Grants)
		}
	}
	for _, db := range widened {
		if !scope.Grants.HasEntry(db + ".*") {
			t.Fatalf("widened %s is not granted whole in the scope", db)
		}
	}
	if !strings.Contains(s.Summary(), fmt.Sprintf("IAM scope widened to the whole database for %d databases", len(widened))) {
		t.Fatalf("the summary does not say which databases were widened:\n%s", s.Summary())
	}
	small := DefaultSettings()
	small.Mode, small.CatalogWarehouse = ModeActive, "s3://lake/warehouse"
	small.Grants, _ = ParseGrants("analytics.*,sales.orders")
	if scope, widened, err := small.IAMScope(); err != nil || len(widened) > 0 || scope.Grants.String() != small.Grants.String() {
		t.Fatalf("a small grant list's scope %s widened %v (%v)", scope.Grants, widened, err)
	}
}

// TestS3Tables_1000TablesIn100NamespacesFitEveryAWSLimit: the same
// deployment of 1,000 tables in 100 namespaces in an S3 table bucket,
// granted by namespace, by table and mixed, synthesizes within every
// limit CheckLimits measures, and every granted namespace is still named
// in the conditions of the committer's s3tables: statements (a widened
// namespace by itself, its tables by theirs otherwise).
func TestS3Tables_1000TablesIn100NamespacesFitEveryAWSLimit(t *testing.T) {
	for name, grants := range scaleGrants() {
		t.Run(name, func(t *testing.T) {
			f, tpl, indented := synthScaleIn(t, s3tablesContext(), grants, strings.Contains(name, "agnostic"))
			checks := CheckLimits(tpl, indented)
			for _, c := range checks {
				if !c.OK() {
					t.Errorf("%s", c)
				}
			}
			var conditions strings.Builder
			for _, gs := range f.s3tablesGrants(t, "Committer") {
				for _, g := range gs {
					conditions.WriteString(g)
				}
			}
			for d := 0; d < 100; d++ {
				if db := fmt.Sprintf("db%03d", d); !strings.Contains(conditions.String(), `"`+db+`"`) {
					t.Errorf("namespace %s is named in no condition of the committer's s3tables: statements", db)
				}
			}
		})
	}
}

// TestSettings_NamespaceGrantsBeyondIAMsQuotasFailNamingTheWayOut: 150
// granted namespaces of realistic names need more IAM policy than a role
// may carry (measured: 16 managed policies for the committer, against 10),
// and there is no table grant to widen from: IAMScope refuses, naming the
// quota and the way out (several stacks), not table grants.
func TestSettings_NamespaceGrantsBeyondIAMsQuotasFailNamingTheWayOut(t *testing.T) {
	var g []string
	for i := 0; i < 150; i++ {
		g = append(g, fmt.Sprintf("sales_warehouse_db_%03d.*", i))
	}
	s := DefaultSettings()
	s.Mode, s.CatalogWarehouse = ModeActive, "s3://lake/warehouse"
	var err error
	if s.Grants, err = ParseGrants(strings.Join(g, ",")); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.IAMScope()
	if err == nil || !strings.Contains(err.Error(), "150 granted namespaces alone do not fit") || !strings.Contains(err.Error(), CtxStackName) {
		t.Fatalf("IAMScope: %v, want a refusal naming the namespaces and %s", err, CtxStackName)
	}
}
