package icekeeper.eventruler;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import software.amazon.event.ruler.JsonRuleCompiler;
import software.amazon.event.ruler.Machine;

/**
 * Matches EventBridge event patterns against events with event-ruler, the
 * library EventBridge's own matching is built on.
 *
 * <p>Reads one JSON object on standard input:
 *
 * <pre>
 * {"rules":  [{"name": "...", "pattern": {...event pattern...}}, ...],
 *  "events": [{"name": "...", "event":   {...event...}}, ...]}
 * </pre>
 *
 * and prints {"matches": {"event name": ["rule name", ...], ...}}, every
 * event present, its rules sorted. A pattern event-ruler refuses (a syntax
 * EventBridge would refuse too, or an operator this version lacks) is an
 * error naming the rule: exit status 2, nothing on standard output.
 *
 * <p>All rules go into one Machine and each event is matched with
 * rulesForJSONEvent, the array-consistent matcher event-ruler's README
 * recommends ("rulesForEvent(String eventJSON) is deprecated in favor of
 * rulesForJSONEvent()"); one JVM start serves every rule and event.
 */
public final class Match {
    private Match() {}

    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode in = json.readTree(System.in);
        Machine machine = new Machine();
        for (JsonNode rule : in.path("rules")) {
            String name = rule.path("name").asText();
            String pattern = json.writeValueAsString(rule.path("pattern"));
            // JsonRuleCompiler is the compiler Machine.addRule(name, String)
            // uses; check() returns its message instead of throwing.
            String problem = JsonRuleCompiler.check(pattern);
            if (problem != null) {
                fail("rule " + name + ": event-ruler refuses the pattern " + pattern + ": " + problem);
            }
            try {
                machine.addRule(name, pattern);
            } catch (IOException | RuntimeException e) {
                fail("rule " + name + ": event-ruler refuses the pattern " + pattern + ": " + e);
            }
        }
        ObjectNode out = json.createObjectNode();
        ObjectNode matches = out.putObject("matches");
        for (JsonNode event : in.path("events")) {
            String name = event.path("name").asText();
            if (matches.has(name)) {
                fail("event " + name + " is given twice");
            }
            List<String> rules = new ArrayList<>(machine.rulesForJSONEvent(json.writeValueAsString(event.path("event"))));
            Collections.sort(rules);
            ArrayNode list = matches.putArray(name);
            rules.forEach(list::add);
        }
        System.out.println(json.writeValueAsString(out));
    }

    private static void fail(String message) {
        System.err.println("eventruler: " + message);
        System.exit(2);
    }
}
