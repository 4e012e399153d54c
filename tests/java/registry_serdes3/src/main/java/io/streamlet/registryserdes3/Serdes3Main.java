package io.streamlet.registryserdes3;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaDeserializer;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaSerializer;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaDeserializer;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaSerializer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Apicurio Registry's 3.x Java serdes configured for Confluent's wire format, as a filter: one request per
 * line on stdin, one JSON answer per line on stdout.
 *
 * <p>A request: {"registry": the registry's Confluent API URL (…/apis/ccompat/v7; the serdes are given the
 * v3 API of the same server), "format": "avro" | "protobuf" | "json", "topic": ..., "isKey": bool, "schema":
 * the Avro schema's JSON text (avro), "descriptor": a base64 FileDescriptorProto and "message": the message's
 * full name (protobuf), "values": values to serialize (Avro: each value's Avro JSON encoding as a string;
 * Protobuf: its JSON mapping; JSON Schema: the JSON), "read": hex byte strings to deserialize, "readType":
 * (protobuf, optional) the message name the reader is told in the record header Apicurio's deserializer
 * consults}. The answer: {"written": [hex of each value's bytes], "read": [each value read, as JSON]}, or
 * {"error": the exception}. Format "protobuf-body" parses plain Protobuf bodies (no framing, no registry) as
 * the named message.
 *
 * <p>The serializers look the schema up (they never register it): the subject the topic name strategy gives
 * (TOPIC-value or TOPIC-key, in the registry's default group) must have it registered.
 */
public final class Serdes3Main {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer = JsonNodeFactory.instance.objectNode();
            try {
                answer = handle(JSON.readTree(line));
            } catch (Throwable e) {
                e.printStackTrace();  // the whole trace on stderr; the answer names the causes
                StringBuilder text = new StringBuilder();
                for (Throwable t = e; t != null; t = t.getCause()) {
                    text.append(t.getClass().getName()).append(": ").append(t.getMessage()).append(" / ");
                }
                answer.put("error", text.toString());
            }
            out.println(JSON.writeValueAsString(answer));
        }
    }

    static Map<String, Object> config(String registry, String format) {
        Map<String, Object> config = new HashMap<>();
        config.put("apicurio.registry.url", registry.replaceAll("/apis/ccompat/v[0-9]+/?$", "") + "/apis/registry/v3");
        // Confluent's framing: magic byte 0 and a 4-byte id, the content id (the id Apicurio 3's Confluent
        // API gives), no headers. These are 3.x's defaults; set so the test does not depend on them.
        config.put("apicurio.registry.id-handler", "io.apicurio.registry.serde.Default4ByteIdHandler");
        config.put("apicurio.registry.use-id", "contentId");
        config.put("apicurio.registry.headers.enabled", false);
        config.put("apicurio.registry.auto-register", false);
        config.put("apicurio.registry.find-latest", true);
        if (format.equals("protobuf")) {
            // Confluent's Protobuf layout: the message indexes before the body, not Apicurio's Ref.
            config.put("apicurio.registry.serde.send-indexes", true);
            config.put("apicurio.registry.serde.send-type-ref", false);
            config.put("apicurio.registry.serde.read-indexes", true);
            config.put("apicurio.registry.serde.read-type-ref", false);
            // Its check looks the message up among the file's top-level types only (a nested one is
            // reported missing) and compares against the registered text: off, as for 2.6.
            config.put("apicurio.registry.serde.validation-enabled", false);
            // Read as DynamicMessage: the descriptor of the message the "readType" header names, found
            // among the registered file's top-level messages (its reader ignores the message indexes).
            config.put("apicurio.registry.deserializer.key.return-class", DynamicMessage.class.getName());
            config.put("apicurio.registry.deserializer.value.return-class", DynamicMessage.class.getName());
        }
        if (format.equals("json")) {
            config.put("apicurio.registry.serde.validation-enabled", true);
            config.put("apicurio.registry.deserializer.key.return-class", JsonNode.class.getName());
            config.put("apicurio.registry.deserializer.value.return-class", JsonNode.class.getName());
        }
        return config;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static ObjectNode handle(JsonNode request) throws Exception {
        String format = request.get("format").asText();
        if (format.equals("protobuf-body")) {
            return readBodies(request);
        }
        String topic = request.get("topic").asText();
        boolean isKey = request.path("isKey").asBoolean(false);
        Map<String, Object> config = config(request.get("registry").asText(), format);
        Serializer serializer;
        Deserializer deserializer;
        Schema avroSchema = null;
        Descriptor descriptor = null;
        switch (format) {
            case "avro" -> {
                serializer = new AvroKafkaSerializer<Object>();
                deserializer = new AvroKafkaDeserializer<Object>();
                if (request.has("schema")) {
                    avroSchema = new Schema.Parser().parse(request.get("schema").asText());
                }
            }
            case "protobuf" -> {
                serializer = new ProtobufKafkaSerializer<Message>();
                deserializer = new ProtobufKafkaDeserializer<DynamicMessage>();
                if (request.has("descriptor")) {
                    descriptor = descriptorOf(request);
                }
            }
            case "json" -> {
                serializer = new JsonSchemaKafkaSerializer<JsonNode>();
                deserializer = new JsonSchemaKafkaDeserializer<JsonNode>();
            }
            default -> throw new IllegalArgumentException("unknown format " + format);
        }
        serializer.configure(config, isKey);
        deserializer.configure(config, isKey);
        ObjectNode answer = JsonNodeFactory.instance.objectNode();
        ArrayNode written = answer.putArray("written");
        for (JsonNode value : request.path("values")) {
            Object data = switch (format) {
                case "avro" -> orderedMapReader(avroSchema).read(
                        null, DecoderFactory.get().jsonDecoder(avroSchema, value.asText()));
                case "protobuf" -> {
                    DynamicMessage.Builder builder = DynamicMessage.newBuilder(descriptor);
                    JsonFormat.parser().merge(JSON.writeValueAsString(value), builder);
                    yield builder.build();
                }
                default -> value;
            };
            written.add(HEX.formatHex(serializer.serialize(topic, data)));
        }
        ArrayNode read = answer.putArray("read");
        for (JsonNode hex : request.path("read")) {
            RecordHeaders headers = new RecordHeaders();
            if (request.has("readType")) {
                headers.add(isKey ? "apicurio.key.msgType" : "apicurio.value.msgType",
                        request.get("readType").asText().getBytes(StandardCharsets.UTF_8));
            }
            Object value = deserializer.deserialize(topic, headers, HEX.parseHex(hex.asText()));
            read.add(switch (format) {
                case "avro" -> JSON.readTree(GenericData.get().toString(value));
                case "protobuf" -> JSON.readTree(JsonFormat.printer().print((Message) value));
                default -> (JsonNode) value;
            });
        }
        serializer.close();
        deserializer.close();
        return answer;
    }

    /** A generic reader whose maps keep their entries in the order read (Avro's own reader makes HashMaps): a
     * map is then written in the order it was given in. */
    static GenericDatumReader<Object> orderedMapReader(Schema schema) {
        GenericData data = new GenericData() {
            @Override
            public Object newMap(Object old, int size) {
                return new LinkedHashMap<>();
            }
        };
        return new GenericDatumReader<>(schema, schema, data);
    }

    /** Plain Protobuf bodies (no framing) parsed by protobuf-java as the named message, printed as JSON. */
    static ObjectNode readBodies(JsonNode request) throws Exception {
        Descriptor descriptor = descriptorOf(request);
        ObjectNode answer = JsonNodeFactory.instance.objectNode();
        ArrayNode read = answer.putArray("read");
        for (JsonNode hex : request.path("read")) {
            DynamicMessage message = DynamicMessage.parseFrom(descriptor, HEX.parseHex(hex.asText()));
            read.add(JSON.readTree(JsonFormat.printer().print(message)));
        }
        return answer;
    }

    static Descriptor descriptorOf(JsonNode request) throws Exception {
        FileDescriptorProto proto = FileDescriptorProto.parseFrom(
                Base64.getDecoder().decode(request.get("descriptor").asText()));
        FileDescriptor file = FileDescriptor.buildFrom(proto, new FileDescriptor[0]);
        String fullName = request.get("message").asText();
        String[] path = fullName.substring(file.getPackage().isEmpty() ? 0 : file.getPackage().length() + 1)
                .split("\\.");
        Descriptor found = file.findMessageTypeByName(path[0]);
        for (int i = 1; found != null && i < path.length; i++) {
            found = found.findNestedTypeByName(path[i]);
        }
        if (found == null) {
            throw new IllegalArgumentException("no message " + fullName);
        }
        return found;
    }
}
