// Confluent's official JavaScript serializers (@confluentinc/schemaregistry) for streamlet's byte-equality
// tests: one JSON request per line on stdin, one JSON answer per line on stdout ({"error": ...} when the request
// failed). Every request names the registry ("registry"), the topic ("topic"), whether it is for keys ("isKey")
// and the format ("format": "protobuf", "avro" or "json"); "values" are written with the format's serializer
// (answer "written": hex strings) and "read" (hex strings) are read with its deserializer (answer "read").
//
// Protobuf: "descriptorSet" is a base64 FileDescriptorSet (what Python's descriptor_pb2 writes), loaded at run
// time with @bufbuild/protobuf's createFileRegistry; "message" is the full name of the message written; values
// are in Protobuf's JSON mapping and are read back to it. The serializer registers the message's file itself
// (autoRegisterSchemas). Avro and JSON Schema: the serializers write with the subject's latest registered schema
// (useLatestVersion), as these serializers infer a schema from the value otherwise.
"use strict";

const readline = require("node:readline");
const { createFileRegistry, createMutableRegistry, fromBinary, fromJson, toJson } = require("@bufbuild/protobuf");
const { FileDescriptorSetSchema } = require("@bufbuild/protobuf/wkt");
const sr = require("@confluentinc/schemaregistry");

const clients = new Map();

function clientFor(url) {
  let client = clients.get(url);
  if (client === undefined) {
    client = new sr.SchemaRegistryClient({ baseURLs: [url], maxRetries: 0 });
    clients.set(url, client);
  }
  return client;
}

function serdesFor(request) {
  const client = clientFor(request.registry);
  const type = request.isKey ? sr.SerdeType.KEY : sr.SerdeType.VALUE;
  switch (request.format) {
    case "protobuf": {
      const files = createFileRegistry(fromBinary(FileDescriptorSetSchema, Buffer.from(request.descriptorSet, "base64")));
      const desc = files.getMessage(request.message);
      if (desc === undefined) {
        throw new Error(`no message ${request.message} in the descriptor set`);
      }
      const registry = createMutableRegistry(desc.file);
      return {
        serializer: new sr.ProtobufSerializer(client, type, { autoRegisterSchemas: true, registry }),
        deserializer: new sr.ProtobufDeserializer(client, type, {}),
        toWire: (value) => fromJson(desc, value, { registry }),
        fromWire: (message) => {
          // The deserializer picks the type from the message indexes: it must be the one written.
          if (message.$typeName !== desc.typeName) {
            throw new Error(`read a ${message.$typeName}, expected a ${desc.typeName}`);
          }
          return toJson(desc, message, { registry });
        },
      };
    }
    case "avro":
      return {
        serializer: new sr.AvroSerializer(client, type, { useLatestVersion: true }),
        deserializer: new sr.AvroDeserializer(client, type, {}),
        toWire: (value) => value,
        fromWire: (value) => value,
      };
    case "json":
      return {
        serializer: new sr.JsonSerializer(client, type, { useLatestVersion: true }),
        deserializer: new sr.JsonDeserializer(client, type, {}),
        toWire: (value) => value,
        fromWire: (value) => value,
      };
    default:
      throw new Error(`unknown format ${request.format}`);
  }
}

async function answer(request) {
  const serdes = serdesFor(request);
  const written = [];
  for (const value of request.values ?? []) {
    written.push((await serdes.serializer.serialize(request.topic, serdes.toWire(value))).toString("hex"));
  }
  const read = [];
  for (const hex of request.read ?? []) {
    read.push(serdes.fromWire(await serdes.deserializer.deserialize(request.topic, Buffer.from(hex, "hex"))));
  }
  return { written, read };
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === "") {
      continue;
    }
    let reply;
    try {
      reply = await answer(JSON.parse(line));
    } catch (error) {
      reply = { error: String(error && error.stack ? error.stack : error) };
    }
    process.stdout.write(JSON.stringify(reply) + "\n");
  }
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
