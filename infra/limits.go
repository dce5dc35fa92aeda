package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// AWS's limits that a large grant list runs into, checked on the
// synthesized template (CheckLimits; `make preview` prints them, a test
// holds the 1,000-table deployment to them).
const (
	// IAM: "Role policy size cannot exceed 10,240 characters" (the
	// aggregate of a role's inline policies), a managed policy 6,144
	// characters, white space not counted; 10 managed policies per role by
	// default (20 at most, through a quota increase)
	// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html,
	// https://repost.aws/knowledge-center/iam-increase-policy-size).
	IAMInlinePerRoleLimit  = 10_240
	IAMManagedPolicyLimit  = 6_144
	IAMManagedPerRoleLimit = 10
	LambdaEnvironmentLimit = 4_096 // 4 KB, all variables together (Lambda quotas)
	TemplateS3Limit        = 1_000_000
	TemplateDirectLimit    = 51_200
	TemplateResourcesLimit = 500
	// EventBridge: an event pattern of at most 2,048 characters (adjustable
	// through a quota request), at most 5 targets a rule, 300 rules an
	// event bus (adjustable), and at most 30 rules an event bus whose
	// patterns use wildcard filters (not adjustable: the account's other
	// rules count too)
	// (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html).
	EventPatternLimit       = 2_048
	EventTargetsPerRule     = 5
	EventRulesPerBusLimit   = 300
	EventWildcardRulesLimit = 30
	eventBridgeLimitsURL    = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"
	cfnLimitsURL            = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html"
	lambdaLimitsURL         = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
	iamLimitsURL            = "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html"
	tokenNameLength         = 128 // a generated name or URL (bucket, table, queue URL): CloudFormation's names stay below it
	tokenARNLength          = 160 // an ARN of one of the stack's resources
	pseudoParameterMaxChars = 14  // AWS::Region ("ap-southeast-4"), AWS::AccountId (12), AWS::Partition ("aws-us-gov")
)

// LimitCheck is one measured quantity against its AWS limit.
type LimitCheck struct {
	What        string
	Size, Limit int
	Unit, URL   string
}

// OK reports whether the size is within the limit.
func (c LimitCheck) OK() bool { return c.Size <= c.Limit }

func (c LimitCheck) String() string {
	verdict := "ok"
	if !c.OK() {
		verdict = "OVER"
	}
	return fmt.Sprintf("%-60s %9d / %9d %-10s %s", c.What, c.Size, c.Limit, c.Unit, verdict)
}

// CheckLimits measures a synthesized template (the CloudFormation JSON,
// decoded) against IAM's policy quotas, Lambda's environment quota,
// EventBridge's rule quotas and CloudFormation's template quotas. Values CloudFormation resolves at
// deploy time (Ref, Fn::GetAtt) count at an upper bound of their length,
// so a check that passes here passes when deployed.
func CheckLimits(template map[string]any, indented []byte) []LimitCheck {
	resources, _ := template["Resources"].(map[string]any)
	var out []LimitCheck
	inline := map[string]int{}
	managed := map[string]int{}
	roles := map[string]bool{}
	rulesOnBus, wildcardRulesOnBus := map[string]int{}, map[string]int{}
	ids := make([]string, 0, len(resources))
	for id := range resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r, _ := resources[id].(map[string]any)
		p, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::IAM::Role":
			roles[id] = true
			managed[id] += len(asList(p["ManagedPolicyArns"]))
		case "AWS::IAM::Policy":
			size := policySize(p["PolicyDocument"])
			for _, role := range refs(p["Roles"]) {
				inline[role] += size
			}
		case "AWS::IAM::ManagedPolicy":
			out = append(out, LimitCheck{What: "IAM managed policy " + id, Size: policySize(p["PolicyDocument"]), Limit: IAMManagedPolicyLimit, Unit: "chars", URL: iamLimitsURL})
			for _, role := range refs(p["Roles"]) {
				managed[role]++
			}
		case "AWS::Events::Rule":
			bus := "default"
			if p["EventBusName"] != nil {
				raw, _ := json.Marshal(p["EventBusName"])
				bus = string(raw)
			}
			rulesOnBus[bus]++
			out = append(out, LimitCheck{What: "EventBridge targets of rule " + id, Size: len(asList(p["Targets"])), Limit: EventTargetsPerRule, Unit: "targets", URL: eventBridgeLimitsURL})
			if p["EventPattern"] != nil {
				size := EventPatternSize(p["EventPattern"])
				out = append(out, LimitCheck{What: "EventBridge event pattern of rule " + id, Size: size, Limit: EventPatternLimit, Unit: "chars", URL: eventBridgeLimitsURL})
				if usesWildcard(p["EventPattern"]) {
					wildcardRulesOnBus[bus]++
				}
			}
		case "AWS::Lambda::Function":
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			out = append(out, LimitCheck{What: "Lambda environment of " + id, Size: environmentSize(vars), Limit: LambdaEnvironmentLimit, Unit: "bytes", URL: lambdaLimitsURL})
		}
	}
	for _, role := range sortedKeys(roles) {
		out = append(out,
			LimitCheck{What: "IAM inline policies of role " + role, Size: inline[role], Limit: IAMInlinePerRoleLimit, Unit: "chars", URL: iamLimitsURL},
			LimitCheck{What: "IAM managed policies attached to role " + role, Size: managed[role], Limit: IAMManagedPerRoleLimit, Unit: "policies", URL: iamLimitsURL})
	}
	for _, bus := range sortedKeys(rulesOnBus) {
		name := "the default event bus"
		if bus != "default" {
			name = "event bus " + strings.Trim(bus, `"`)
		}
		// A lower bound: the account's own rules on the bus count too.
		out = append(out,
			LimitCheck{What: "EventBridge rules of this stack on " + name, Size: rulesOnBus[bus], Limit: EventRulesPerBusLimit, Unit: "rules", URL: eventBridgeLimitsURL},
			LimitCheck{What: "EventBridge wildcard rules of this stack on " + name, Size: wildcardRulesOnBus[bus], Limit: MaxWildcardRules, Unit: "rules", URL: eventBridgeLimitsURL})
	}
	out = append(out,
		LimitCheck{What: "CloudFormation template (uploaded through S3, as the CDK CLI does)", Size: len(indented), Limit: TemplateS3Limit, Unit: "bytes", URL: cfnLimitsURL},
		LimitCheck{What: "CloudFormation resources", Size: len(resources), Limit: TemplateResourcesLimit, Unit: "resources", URL: cfnLimitsURL})
	return out
}

// DirectTemplateCheck is the template against the 51,200 bytes a request
// body may carry; the CDK CLI uploads a larger one to its bootstrap bucket
// first, so only `aws cloudformation deploy --template-body` users meet it.
func DirectTemplateCheck(indented []byte) LimitCheck {
	return LimitCheck{What: "CloudFormation template in a request body (informational)", Size: len(indented), Limit: TemplateDirectLimit, Unit: "bytes", URL: cfnLimitsURL}
}

// EventPatternSize is the length of an event pattern as EventBridge
// counts it: the pattern's JSON, without white space (CloudFormation
// passes a JSON object; PutRule takes the string).
func EventPatternSize(pattern any) int {
	raw, _ := json.Marshal(pattern)
	return len([]rune(string(raw)))
}

// usesWildcard reports whether a pattern has a wildcard filter anywhere.
func usesWildcard(pattern any) bool {
	switch x := pattern.(type) {
	case map[string]any:
		for k, v := range x {
			if k == "wildcard" || usesWildcard(v) {
				return true
			}
		}
	case []any:
		for _, v := range x {
			if usesWildcard(v) {
				return true
			}
		}
	}
	return false
}

// policySize is the length of a policy document without white space, as
// IAM counts it, with deploy-time values at their upper bound.
func policySize(doc any) int {
	raw, _ := json.Marshal(resolveUpper(doc))
	return len(raw)
}

// environmentSize is the size of a function's variables: every name and
// value, as JSON (an upper bound of the names and values alone).
func environmentSize(vars map[string]any) int {
	if len(vars) == 0 {
		return 0
	}
	raw, _ := json.Marshal(resolveUpper(vars))
	return len(raw)
}

// resolveUpper replaces CloudFormation intrinsics with strings as long as
// the longest value they can resolve to.
func resolveUpper(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Ref":
					if name, _ := arg.(string); strings.HasPrefix(name, "AWS::") {
						return strings.Repeat("x", pseudoParameterMaxChars)
					}
					return strings.Repeat("x", tokenNameLength)
				case "Fn::GetAtt":
					return strings.Repeat("x", tokenARNLength)
				case "Fn::Join":
					parts, _ := arg.([]any)
					if len(parts) == 2 {
						sep, _ := parts[0].(string)
						var ss []string
						for _, e := range asList(parts[1]) {
							s, _ := resolveUpper(e).(string)
							ss = append(ss, s)
						}
						return strings.Join(ss, sep)
					}
				}
				if strings.HasPrefix(k, "Fn::") {
					return strings.Repeat("x", tokenARNLength)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = resolveUpper(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = resolveUpper(e)
		}
		return out
	}
	return v
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// refs are the logical ids a list of {"Ref": id} names.
func refs(v any) []string {
	var out []string
	for _, e := range asList(v) {
		if m, ok := e.(map[string]any); ok {
			if id, ok := m["Ref"].(string); ok {
				out = append(out, id)
			}
		}
	}
	return out
}
