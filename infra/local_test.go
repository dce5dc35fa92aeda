package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// settings.json is the deployment's settings file, committed with the
// defaults: it must say what DefaultSettings says, and name every setting.
func TestSettingsFile_IsTheDefaults(t *testing.T) {
	ctx, err := readSettingsFile(DefaultSettingsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ContextKeys() {
		if _, ok := ctx[k]; !ok {
			t.Errorf("%s does not show the default of %q", DefaultSettingsFile, k)
		}
	}
	if a, _ := ctx[CtxAssetDir].(string); a != DefaultSettings().AssetDir {
		t.Errorf("%s assetDir %q, default %q", DefaultSettingsFile, a, DefaultSettings().AssetDir)
	}
	dir := t.TempDir()
	writeBootstraps(t, dir)
	ctx[CtxAssetDir] = dir
	got, err := settingsFrom(t, ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSettings()
	want.AssetDir = dir
	want.Grants, _ = ParseGrants("")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s gives\n %+v\nDefaultSettings is\n %+v", DefaultSettingsFile, got, want)
	}
}

// cdk.json holds the CDK's own settings only: the app, and as context the
// recommended feature flags, no icekeeper setting (those live in
// settings.json, so that `cdk -c` overrides them for one run only).
func TestCdkJSON_HoldsOnlyTheCDKsSettings(t *testing.T) {
	raw, err := os.ReadFile("cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		App     string         `json:"app"`
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.App != "go run ." {
		t.Errorf("app %q, want go run .", doc.App)
	}
	for k := range doc.Context {
		if contains(ContextKeys(), k) {
			t.Errorf("cdk.json sets icekeeper's %q; it belongs in %s", k, DefaultSettingsFile)
		}
		if !strings.HasPrefix(k, "@aws-cdk") {
			t.Errorf("cdk.json context %q is not a CDK feature flag", k)
		}
	}
	if doc.Context["@aws-cdk/aws-iam:minimizePolicies"] != true {
		t.Error("cdk.json lacks the recommended feature flags")
	}
}

// TestSettingsFile_UnknownSettingsAreRefused: a misspelled key in the
// settings file stops the synth, naming it.
func TestSettingsFile_UnknownSettingsAreRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(p, []byte(`{"mode":"advisory","grantz":"sales"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSettingsFile(p); err == nil || !strings.Contains(err.Error(), "grantz") {
		t.Fatalf("err %v, want the unknown key named", err)
	}
}

// localContext reads LOCAL_CONTEXT, the context of `make deploy-local`,
// from the Makefile.
func localContext(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	var line string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "LOCAL_CONTEXT") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("no LOCAL_CONTEXT in the Makefile")
	}
	ctx := map[string]any{}
	for _, m := range regexp.MustCompile(`-c\s+('[^']*'|\S+)`).FindAllStringSubmatch(line, -1) {
		k, v, _ := strings.Cut(strings.Trim(m[1], "'"), "=")
		ctx[k] = v
	}
	return ctx
}

// The LocalStack files, the Makefile's deploy-local context and the stack
// agree: the catalog and S3 endpoints are the compose services' host names,
// the Lambda network is the compose network, the granted tables live in the
// bucket the init script creates, and the context synthesizes.
func TestLocalStack_FilesAgreeWithTheDeployLocalContext(t *testing.T) {
	ctx := localContext(t)
	compose, err := os.ReadFile(filepath.Join("..", "localstack", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	initScript, err := os.ReadFile(filepath.Join("..", "localstack", "init", "ready.d", "10-warehouse.sh"))
	if err != nil {
		t.Fatal(err)
	}
	host := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		return u.Host
	}
	catProps := map[string]string{}
	for _, kv := range strings.Split(ctx[CtxCatalogProperties].(string), ",") {
		k, v, _ := strings.Cut(kv, "=")
		catProps[k] = v
	}
	for what, h := range map[string]string{"catalogUri": host(ctx[CtxCatalogURI].(string)), "s3.endpoint": host(catProps["s3.endpoint"])} {
		name, port, _ := strings.Cut(h, ":")
		if !strings.Contains(string(compose), "hostname: "+name) || !strings.Contains(string(compose), port+":"+port) {
			t.Errorf("%s %s is not a compose service host and port", what, h)
		}
	}
	if !strings.Contains(string(compose), "LAMBDA_DOCKER_NETWORK: icekeeper-local") || !strings.Contains(string(compose), "name: icekeeper-local\n") {
		t.Error("the Lambda containers do not join the compose network")
	}
	bucket, _, err := splitS3(ctx[CtxWarehouseLocation].(string) + "/x")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(initScript), "--bucket "+bucket) || !strings.Contains(string(compose), "CATALOG_WAREHOUSE: s3://"+bucket+"/") {
		t.Errorf("warehouse bucket %s is not the one the init script creates and the REST catalog uses", bucket)
	}
	if !strings.Contains(string(initScript), "EventBridgeConfiguration") {
		t.Error("the init script does not turn on EventBridge notifications")
	}
	ctx[CtxArchitecture] = "arm64"
	f := mustSynth(t, ctx) // synth points assetDir at dummy bootstraps
	var pattern string
	for _, r := range f.ofType("AWS::Events::Rule") {
		if p := props(r)["EventPattern"]; p != nil && strings.Contains(flat(p), "aws.s3") {
			pattern = flat(p)
		}
	}
	if !strings.Contains(pattern, `"name":["`+bucket+`"]`) || !strings.Contains(pattern, "demo/*/metadata/*.metadata.json") {
		t.Errorf("S3 rule %s does not watch the REST catalog's table locations", pattern)
	}
}

// Every context key and every metric the alarms use is documented in
// infra/README.md.
func TestReadme_DocumentsEverySettingAndMetric(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, k := range ContextKeys() {
		if !strings.Contains(readme, "`"+k+"`") {
			t.Errorf("README.md does not document the setting %s", k)
		}
	}
	for _, m := range EmittedMetrics() {
		if !strings.Contains(readme, m) {
			t.Errorf("README.md does not mention the metric %s", m)
		}
	}
}
