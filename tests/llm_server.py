"""Local LLM test server speaking the OpenAI, Anthropic and Gemini wire formats (owner: llm)."""
