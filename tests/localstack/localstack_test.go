// Package localstack deploys icekeeper's CDK stack to LocalStack's own
// server, run on this machine in host mode (no Docker), and checks what the
// deployment is: the stack reaches CREATE_COMPLETE, its queues, redrive
// policies, DLQs, bucket lifecycle rules, alarms, functions, event source
// mappings and the planner's asynchronous invocation settings are as
// synthesized, and real-shaped events reach the planner through the
// stack's own EventBridge rules, where the planner's real bootstrap runs.
// Then a second deployment of the stack, whose catalog is a Glue stand-in,
// compacts a table end to end on LocalStack's queues, tables and bucket.
//
// Skipped unless ICEKEEPER_LOCALSTACK is set; `make localstack-test` sets
// it after installing the pinned LocalStack into localstack/.venv. See
// localstack/README.md for what runs here, what does not and why.
package localstack

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/icekeeper/icekeeper/shared/harness/gluestandin"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	account = "000000000000"
	region  = "us-east-1"
	stack   = "IcekeeperLocal"
)

// rieVersion is AWS's Lambda Runtime Interface Emulator at the version
// tests/rie_test.go pins (checked below): the icekeeper-rie executor runs
// each function's bootstrap under it.
const rieVersion = "v0.0.0-20261030222936-bef5c4ba774d"

// services are the LocalStack services the stack and this test use, each
// of which runs in host mode without Docker (localstack/README.md): the
// stack's resources, CloudFormation and what it needs to deploy (SSM for
// the CDK bootstrap version parameter, S3 for assets), STS for the
// functions' role credentials.
const services = "cloudformation,s3,sqs,events,lambda,dynamodb,iam,sts,logs,cloudwatch,sns,ssm,scheduler"

// ls is one LocalStack server started by the test.
type ls struct {
	t        *testing.T
	endpoint string
	venv     string
	logPath  string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// rieBinary builds AWS's emulator into the user cache, as tests/rie_test.go
// does (same version, same place).
func rieBinary(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "tests", "rie_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `rieVersion = "`+rieVersion+`"`) {
		t.Fatalf("rieVersion %s is not the one tests/rie_test.go pins", rieVersion)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "icekeeper", "aws-lambda-rie-"+rieVersion)
	bin := filepath.Join(dir, "aws-lambda-rie")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "install", "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@"+rieVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install aws-lambda-rie@%s: %v\n%s", rieVersion, err, out)
	}
	return bin
}

// startLocalStack starts LocalStack's server from the venv in host mode
// (`python -m localstack.runtime.main`, the runtime's entry point:
// localstack/runtime/main.py) on a free port of 127.0.0.1, and stops it,
// with everything it started, when the test ends.
func startLocalStack(t *testing.T, venv, rie string) *ls {
	t.Helper()
	port := freePort(t)
	root := t.TempDir()
	l := &ls{t: t, endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), venv: venv, logPath: filepath.Join(root, "localstack.log")}
	logf, err := os.Create(l.logPath)
	if err != nil {
		t.Fatal(err)
	}
	// LocalStack is bounded in time by itself too: coreutils' timeout
	// stops it, with every process it started (timeout signals its process
	// group), when the test's deadline passes, even if the test binary
	// died without running its cleanups (a `go test -timeout` panic).
	life := 15 * time.Minute
	if d, ok := t.Deadline(); ok {
		life = time.Until(d) + 10*time.Second
	}
	cmd := exec.Command("timeout", "--kill-after=10s", strconv.Itoa(int(life.Seconds())), filepath.Join(venv, "bin", "python"), "-m", "localstack.runtime.main")
	// The settings are LocalStack's (localstack/config.py, and the
	// configuration reference at docs.localstack.cloud/references/configuration/).
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + root,
		"GATEWAY_LISTEN=127.0.0.1:" + strconv.Itoa(port),
		// URLs LocalStack hands out (queue URLs, AWS_ENDPOINT_URL) name
		// this address rather than localhost.localstack.cloud, a public
		// DNS name; queue URLs are path-style.
		"LOCALSTACK_HOST=127.0.0.1:" + strconv.Itoa(port),
		"SQS_ENDPOINT_STRATEGY=path",
		// Host mode keeps its files under FILESYSTEM_ROOT (config.py,
		// Directories.for_host).
		"FILESYSTEM_ROOT=" + filepath.Join(root, "fs"),
		"SERVICES=" + services,
		// No DNS server (it would bind port 53), no analytics, no
		// download of LocalStack's TLS certificate (no network here).
		"DNS_ADDRESS=0", "DISABLE_EVENTS=1", "SKIP_SSL_CERT_DOWNLOAD=1",
		// icekeeper's plugins (localstack/plugin): functions run under
		// AWS's emulator on this host; DynamoDB is moto's.
		"LAMBDA_RUNTIME_EXECUTOR=icekeeper-rie", "ICEKEEPER_RIE=" + rie,
		"PROVIDER_OVERRIDE_DYNAMODB=icekeeper-moto",
		// LocalStack's CloudFormation has no AWS::CloudWatch::Dashboard
		// provider; it skips the resource (and says it will refuse to in
		// later versions unless this is set). The test checks that the
		// dashboard is the only resource skipped.
		"CFN_IGNORE_UNSUPPORTED_RESOURCE_TYPES=1",
		// Asynchronous invocations are retried after 1 and 2 s instead of
		// 60 and 120 s (config.py, LAMBDA_RETRY_BASE_DELAY_SECONDS: the
		// n-th retry waits n times the base), so that the planner's
		// retries end within the test.
		"LAMBDA_RETRY_BASE_DELAY=1",
		"AWS_DEFAULT_REGION=" + region,
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start LocalStack: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// SIGTERM lets LocalStack stop its Lambda environments; then the
		// whole process group goes (the emulators are in it).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		logf.Close()
		if t.Failed() {
			t.Logf("LocalStack's log (last 60 lines):\n%s", l.tail(60))
		}
	})
	deadline := time.Now().Add(120 * time.Second)
	for {
		select {
		case <-done:
			t.Fatalf("LocalStack exited:\n%s", l.tail(40))
		default:
		}
		resp, err := http.Get(l.endpoint + "/_localstack/health")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(body), `"sqs"`) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("LocalStack not healthy after 120 s:\n%s", l.tail(40))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (l *ls) tail(n int) string {
	raw, _ := os.ReadFile(l.logPath)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// aws runs the pinned AWS CLI of LocalStack's venv (awscli, a dependency of
// localstack-core[runtime]) against LocalStack and decodes its JSON output
// into out (when not nil). The root module has no CloudFormation,
// CloudWatch or Logs client; the CLI is AWS's own.
func (l *ls) aws(out any, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(l.venv, "bin", "aws"), append([]string{"--endpoint-url", l.endpoint, "--region", region, "--output", "json"}, args...)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION="+region, "AWS_PAGER=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("aws %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	if out != nil && stdout.Len() > 0 {
		if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
			return fmt.Errorf("aws %s: %v: %s", strings.Join(args, " "), err, stdout.String())
		}
	}
	return nil
}

func (l *ls) mustAWS(out any, args ...string) {
	l.t.Helper()
	if err := l.aws(out, args...); err != nil {
		l.t.Fatal(err)
	}
}

// synth synthesizes the stack with the infra module's own app (infra/main.go,
// `go run .`, what `cdk synth` runs), giving it what the CDK CLI gives an
// app: the output directory in CDK_OUTDIR, the context (cdk.json's feature
// flags plus ctx, like `-c key=value`) in CDK_CONTEXT_JSON, and the account
// and region.
func synth(t *testing.T, ctx map[string]any) string {
	t.Helper()
	infra := filepath.Join(repoRoot(t), "infra")
	raw, err := os.ReadFile(filepath.Join(infra, "cdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cdkJSON struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &cdkJSON); err != nil {
		t.Fatal(err)
	}
	for k, v := range ctx {
		cdkJSON.Context[k] = v
	}
	ctxJSON, _ := json.Marshal(cdkJSON.Context)
	out := t.TempDir()
	c, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, "go", "run", ".")
	cmd.Dir = infra
	node := ""
	if v, err := exec.Command("node", "-p", "process.versions.node.split('.')[0]").Output(); err == nil {
		node = strings.TrimSpace(string(v))
	}
	cmd.Env = append(os.Environ(), "CDK_OUTDIR="+out, "CDK_CONTEXT_JSON="+string(ctxJSON),
		"CDK_DEFAULT_ACCOUNT="+account, "CDK_DEFAULT_REGION="+region,
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="+node, "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="+node,
		"JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION="+node)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("synth: %v\n%s", err, msg)
	}
	return out
}

// assetManifest is the part of <stack>.assets.json the CDK CLI's asset
// publishing reads (cdk-assets: each file asset's source and destination).
type assetManifest struct {
	Files map[string]struct {
		Source struct {
			Path      string `json:"path"`
			Packaging string `json:"packaging"`
		} `json:"source"`
		Destinations map[string]struct {
			BucketName string `json:"bucketName"`
			ObjectKey  string `json:"objectKey"`
		} `json:"destinations"`
	} `json:"files"`
}

// zipDir packs dir as cdk-assets does for a "zip" asset, keeping file
// modes (the bootstrap must stay executable).
func zipDir(t *testing.T, dir, to string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		h.Name, h.Method = filepath.ToSlash(rel), zip.Deflate
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = os.WriteFile(to, buf.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// deploy publishes the synthesized assets where the template expects them
// (the CDK bootstrap's asset bucket, and the bootstrap version in SSM that
// the template's CheckBootstrapVersion rule reads), as `cdk bootstrap` and
// `cdk deploy` would, then creates the stack from the template in S3 (it
// is over CloudFormation's 51,200-byte limit for a request body, so the
// CLI uploads it too) and waits for it.
func (l *ls) deploy(t *testing.T, out, stack string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(out, stack+".assets.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m assetManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	// The bootstrap version the pinned CDK requires (the template's rule
	// refuses 1 to 5); 30 is a current bootstrap template's.
	l.mustAWS(nil, "ssm", "put-parameter", "--name", "/cdk-bootstrap/hnb659fds/version", "--value", "30", "--type", "String", "--overwrite")
	buckets := map[string]bool{}
	templateURL := ""
	for hash, f := range m.Files {
		for _, d := range f.Destinations {
			if !buckets[d.BucketName] {
				if err := l.aws(nil, "s3api", "create-bucket", "--bucket", d.BucketName); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
					t.Fatal(err)
				}
				buckets[d.BucketName] = true
			}
			src := filepath.Join(out, f.Source.Path)
			switch f.Source.Packaging {
			case "zip":
				z := filepath.Join(t.TempDir(), hash+".zip")
				zipDir(t, src, z)
				src = z
			case "file":
				if f.Source.Path == stack+".template.json" {
					templateURL = fmt.Sprintf("https://s3.amazonaws.com/%s/%s", d.BucketName, d.ObjectKey)
				}
			default:
				t.Fatalf("asset %s: packaging %q", hash, f.Source.Packaging)
			}
			l.mustAWS(nil, "s3", "cp", "--only-show-errors", src, "s3://"+d.BucketName+"/"+d.ObjectKey)
		}
	}
	if templateURL == "" {
		t.Fatal("the template is not among the assets")
	}
	l.mustAWS(nil, "cloudformation", "create-stack", "--stack-name", stack, "--template-url", templateURL,
		"--capabilities", "CAPABILITY_IAM", "CAPABILITY_NAMED_IAM")
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var d struct {
			Stacks []struct {
				StackStatus, StackStatusReason string
			}
		}
		l.mustAWS(&d, "cloudformation", "describe-stacks", "--stack-name", stack)
		status := d.Stacks[0].StackStatus
		if status == "CREATE_COMPLETE" {
			return
		}
		if !strings.HasSuffix(status, "_IN_PROGRESS") || time.Now().After(deadline) {
			var ev struct {
				StackEvents []struct{ LogicalResourceId, ResourceStatus, ResourceStatusReason string }
			}
			_ = l.aws(&ev, "cloudformation", "describe-stack-events", "--stack-name", stack)
			var failed []string
			for _, e := range ev.StackEvents {
				if strings.Contains(e.ResourceStatus, "FAILED") {
					failed = append(failed, e.LogicalResourceId+": "+e.ResourceStatusReason)
				}
			}
			t.Fatalf("stack %s (%s); failed resources:\n%s", status, d.Stacks[0].StackStatusReason, strings.Join(failed, "\n"))
		}
		time.Sleep(2 * time.Second)
	}
}

// template is the synthesized template, with the stack's resources' physical
// ids once deployed.
type template struct {
	Resources map[string]struct {
		Type       string         `json:"Type"`
		Properties map[string]any `json:"Properties"`
	} `json:"Resources"`
	physical map[string]string // logical id -> physical id
}

func readTemplate(t *testing.T, out, stack string) *template {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(out, stack+".template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl template
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	return &tpl
}

func (tpl *template) ofType(typ string) []string {
	var ids []string
	for id, r := range tpl.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// ref returns the logical id a {"Ref": id} or {"Fn::GetAtt": [id, attr]}
// names.
func ref(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if g, ok := m["Fn::GetAtt"].([]any); ok && len(g) > 0 {
		s, _ := g[0].(string)
		return s
	}
	return ""
}

func num(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		n, _ := strconv.Atoi(x)
		return n
	}
	return -1
}

func TestLocalStack_TheStackDeploysAndEventsReachThePlanner(t *testing.T) {
	if os.Getenv("ICEKEEPER_LOCALSTACK") == "" {
		t.Skip("set ICEKEEPER_LOCALSTACK (make localstack-test) to deploy the stack to LocalStack")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the functions' bootstraps are Linux binaries run on this host")
	}
	venv := os.Getenv("ICEKEEPER_LOCALSTACK_VENV")
	if venv == "" {
		venv = filepath.Join(repoRoot(t), "localstack", ".venv")
	}
	if _, err := os.Stat(filepath.Join(venv, "bin", "python")); err != nil {
		t.Fatalf("no LocalStack venv at %s (make localstack-venv): %v", venv, err)
	}
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }

	rie := rieBinary(t)
	assets := t.TempDir()
	buildBootstraps(t, assets)
	step("bootstraps built")
	out := synth(t, deployContext(assets))
	tpl := readTemplate(t, out, stack)
	step("stack synthesized")
	l := startLocalStack(t, venv, rie)
	step("LocalStack healthy at " + l.endpoint)
	glue, glueURL := gluestandin.ForTest(t)
	pipelineOut := synth(t, pipelineContext(assets, glueURL, l.endpoint))
	step("second stack synthesized")
	l.deploy(t, out, stack)
	step("stack CREATE_COMPLETE")
	tpl.physical = l.stackResources(t, tpl, stack)

	t.Run("queues", func(t *testing.T) { l.checkQueues(t, tpl) })
	t.Run("bucket", func(t *testing.T) { l.checkBucket(t, tpl) })
	t.Run("alarms", func(t *testing.T) { l.checkAlarms(t, tpl) })
	t.Run("functions", func(t *testing.T) { l.checkFunctions(t, tpl) })
	t.Run("wake-ups", func(t *testing.T) { l.checkWakeUps(t, tpl) })
	t.Run("event sources", func(t *testing.T) { l.checkEventSources(t, tpl) })
	step("resources checked")
	t.Run("events", func(t *testing.T) { l.checkEvents(t, tpl) })
	step("events checked")
	if t.Failed() {
		return
	}
	ptpl := readTemplate(t, pipelineOut, pipelineStack)
	l.deploy(t, pipelineOut, pipelineStack)
	ptpl.physical = l.stackResources(t, ptpl, pipelineStack)
	step("second stack (Glue stand-in) CREATE_COMPLETE")
	t.Run("pipeline", func(t *testing.T) { l.checkPipeline(t, ptpl, glue, glueURL) })
	step("pipeline checked")
}
