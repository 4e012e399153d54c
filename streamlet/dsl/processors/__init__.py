"""The DSL's Processor implementations (plain `streamlet.processor.Processor` subclasses)."""
