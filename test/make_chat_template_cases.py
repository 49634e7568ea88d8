"""Writes test/fixtures/chat_templates/chat_cases.txt: transformers' apply_chat_template(messages,
tokenize=False, add_generation_prompt=...) for the chat templates of the instruct checkpoints of
our families, on several conversations, byte for byte, and the templates themselves (written
here from the public checkpoints' tokenizer_config.json: there is no hub access when this runs).
What the C test checks is that our interpreter renders each template string exactly as jinja2
does through transformers, whatever the string. Also writes the templates as fuzz seeds
(test/fuzz_seeds/chat_template) and the chat fixture directory for the CLI test.

Format of chat_cases.txt, one record after another (lengths in bytes; the bytes follow the header
line, then one newline):
  template NAME BOS_LEN EOS_LEN TEMPLATE_LEN\\n BOS EOS TEMPLATE \\n
  case NAME ADD_GENERATION_PROMPT DATE NUM_MESSAGES [ENABLE_THINKING]\\n
                                 (ENABLE_THINKING 0 or 1: passed as enable_thinking=False / True;
                                 absent: not passed. Templates that read enable_thinking get each
                                 case three times: not passed, 1, 0)
  message ROLE CONTENT_LEN\\n CONTENT \\n        (CONTENT_LEN -1: no content, no bytes)
  expected LEN\\n TEXT \\n   or   error LEN\\n MESSAGE \\n   (transformers raised)
Cases belong to the template above them.

Run: python test/make_chat_template_cases.py (from the repository root)."""
import datetime as _dt
import json
import os
import shutil

import transformers
import transformers.utils.chat_template_utils as ctu
from transformers import AutoTokenizer

DATE = "2025-03-05 14:07:09"


class FixedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(2025, 3, 5, 14, 7, 9)


ctu.datetime = FixedDatetime  # strftime_now reads the module's datetime: reproducible dates

LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

LLAMA31 = """{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\\n\\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\\n\\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

# LLaMA-3.2 takes today's date from strftime_now where 3.1 had a fixed one.
LLAMA32 = LLAMA31.replace(
    """{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}""",
    """{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}""",
)
assert LLAMA32 != LLAMA31

LLAMA2 = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}"
    "{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = "
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}"
    "{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif "
    "message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"
)

MISTRAL_V01 = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"
)

MISTRAL_V02 = """{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
"""

MISTRAL_V03 = """{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\\n\\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
"""

QWEN2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a "
    "helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>'"
    " + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

QWEN25 = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

# Qwen3's (Qwen/Qwen3-0.6B's tokenizer_config.json as published with the checkpoint, the same text
# Hugging Face's own Jinja port, huggingface.js packages/jinja, tests under "Qwen/Qwen3-0.6B"): it
# reads enable_thinking (false: an empty <think></think> block opens the reply) and shows an
# assistant message's reasoning (its reasoning_content, else the <think>...</think> part of its
# content) only after the last user query
QWEN3 = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}"""

# The family's later revision of it (Qwen/Qwen3-8B's tokenizer_config.json, as guidance-ai's
# guidance/chat.py copies it): content that is not a string counts as '', reasoning_content is
# read when it is a string
QWEN3_8B = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}"""

ZEPHYR = (
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == "
    "'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and "
    "add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"
)

PHI3 = (
    "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}"
    "{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == "
    "'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"
)

GEMMA = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation "
    "roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = "
    "'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | "
    "trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"
)

# Gemma 3's: a system message becomes a prefix of the first user turn; content strings or lists of
# {type: text/image} items
GEMMA3 = (
    "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n{%- endif -%}\n{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n    {%- if (message['role'] == 'assistant') -%}\n        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n        {%- set role = message['role'] -%}\n    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n        {%- endfor -%}\n    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n    {%- endif -%}\n    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n{%- if add_generation_prompt -%}\n    {{'<start_of_turn>model\\n'}}\n{%- endif -%}\n"
)

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a "
    "helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + "
    "'\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}"
)

FALCON = (
    "{% for message in messages %}{% if not loop.first %}{{ '\n' }}{% endif %}{% if message['role'] == 'system' %}"
    "{{ message['content'] }}{% elif message['role'] == 'user' %}{{ 'User: ' + message['content'] }}{% elif message['role'] == "
    "'assistant' %}{{ 'Falcon: ' + message['content'] }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '\n' + "
    "'Falcon:' }}{% endif %}"
)

SHORT = (
    "{% for message in messages %}{{ message['role'][0] + ': ' + message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'a:' }}{% endif %}"
)

BLOOM = "{% for message in messages %}{{ message.content }}{{ eos_token }}{% endfor %}"

# Not a checkpoint's: the constructs of the subset the templates above leave out, in one place.
CONSTRUCTS = """{#- a comment alone on its line -#}
  {% set ns = namespace(count=0, roles=[]) %}
{%- set greeting %}Hi {{ messages|length }} {% if add_generation_prompt %}gen{% endif %}{% endset %}
[{{ greeting }}] {{ strftime_now("%Y-%m-%d %H:%M:%S %a %A %b %B %j %y %I%p %%") }}
{% for m in messages if m.role != 'system' %}
    {{- loop.index }}/{{ loop.length }}{{ '^' if loop.first }}{{ '$' if loop.last else ',' }} {{ m.role|upper }} {{ m.role|capitalize }}
    {%- set ns.count = ns.count + 1 %}{% set ns.roles = ns.roles + [m.role] %}
    {%- if m.content is defined and m.content is string %} len={{ m.content|length }}
      {%- if m.content.startswith('Hello') %} starts{% elif m.content.endswith(('!', '?')) %} ends{% endif %}
      {%- if 'é' in m.content %} accent{% endif %}{% if 'x' not in m.content %} no-x{% endif %}
      {%- set words = m.content.split() %} words={{ words|length }} first={{ words|first|default('-') }} last={{ (words|last) if words else '-' }}
      {%- set parts = m.content.split(' ', 1) %} parts={{ parts|length }} strip=<{{ m.content.strip() }}> lstrip=<{{ m.content.lstrip() }}> rstrip=<{{ m.content.rstrip() }}>
      {%- if m.content|trim == '' %} empty{% continue %}{% endif %}
    {%- else %} none={{ m.content is defined }}{{ m.content|default('DEF') }}
    {%- endif %}
    {{- ' rev=' ~ m.role[::-1] ~ ' head=' ~ m.role[:2] ~ ' tail=' ~ m.role[-2:] }}
{% else %}
no messages
{% endfor %}
count={{ ns.count }} roles={{ ns.roles|join('|') }} {{ ns.roles }} {{ ns.roles|tojson }}
{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='role')|list|length }} users, {{ messages|rejectattr('role', 'equalto', 'user')|list|length }} others
{% set d = {'b': 1, 'a': [1, 2.5, none, true, 'q"\\\\'], 'c': {'n': -3}} -%}
{{ d|tojson }} {{ d|tojson(indent=2) }} {{ d|tojson(sort_keys=true) }}
{% for k, v in d|items %}{{ k }}={{ v }}{{ ';' if not loop.last }}{% endfor %} {% for k, v in d.items() %}{{ k }}{% endfor %}
{{ d.get('a')|length }} {{ d.get('z', 'fallback') }} {{ d.z is defined }} {{ d['c']['n'] * 2 + 7 // 2 - 7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ -7 // 2 }} {{ 1.5 + 1 }}
{{ 'a' ~ 1 ~ none ~ true ~ 2.0 }} {{ [1, 2] + [3] }} {{ 'ab' * 3 }} {{ (1, 'x') }} {{ 1 < 2 < 3 }} {{ 'b' > 'a' }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }}
{{ none is none }} {{ 'x' is string }} {{ d is mapping }} {{ 1 is number }} {{ undefined_thing is undefined }} {{ not true or false and true }}
{%+ if true %}  kept spaces{% endif +%}
{% for i in range(3) %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %} {{ (range(5)|list)[1:4] }} {{ range(10, 0, -3)|list }}
{{ "multi" "part" }} {{ 'esc\\t\\x41\\u00e9\\n' }} {{ "Title case words"|title }} {{ 'a-b-c'.replace('-', '+') }} {{ 'abc'|replace('b', 'B') }}
{{- bos_token ~ '|' ~ eos_token }}
"""

TEMPLATES = [
    ("llama3", LLAMA3, "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3.1", LLAMA31, "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3.2", LLAMA32, "<|begin_of_text|>", "<|eot_id|>"),
    ("llama2", LLAMA2, "<s>", "</s>"),
    ("mistral-v0.1", MISTRAL_V01, "<s>", "</s>"),
    ("mistral-v0.2", MISTRAL_V02, "<s>", "</s>"),
    ("mistral-v0.3", MISTRAL_V03, "<s>", "</s>"),
    ("qwen2", QWEN2, "<|endoftext|>", "<|im_end|>"),
    ("qwen2.5", QWEN25, "<|endoftext|>", "<|im_end|>"),
    ("qwen3", QWEN3, "<|endoftext|>", "<|im_end|>"),
    ("qwen3-8b", QWEN3_8B, "<|endoftext|>", "<|im_end|>"),
    ("zephyr", ZEPHYR, "<s>", "</s>"),
    ("phi3", PHI3, "<s>", "<|endoftext|>"),
    ("gemma", GEMMA, "<bos>", "<eos>"),
    ("gemma3", GEMMA3, "<bos>", "<eos>"),
    ("chatml", CHATML, "<|im_start|>", "<|im_end|>"),
    ("smollm2", SMOLLM2, "<|im_start|>", "<|im_end|>"),
    ("falcon", FALCON, "<|endoftext|>", "<|endoftext|>"),
    ("bloom", BLOOM, "<s>", "</s>"),
    ("short", SHORT, "<s>", "</s>"),
    ("constructs", CONSTRUCTS, "<s>", "</s>"),
]

SPECIAL = "Quote \"x\" and 'y' {{ not a tag }} {% if %} \\ back\nnew line\ttab  "
UNICODE = "h\u00e9llo w\u00f6rld \u4f60\u597d \U0001f642 \u2014 \u2018quoted\u2019"
CONVERSATIONS = [
    ("user", [("user", "Hello!")]),
    ("system-user", [("system", "You are terse."), ("user", "What is 2+2?")]),
    ("multi-turn", [("system", "  Be kind.  "), ("user", "Hi"), ("assistant", "Hello! How can I help?"), ("user", "Tell me a joke.")]),
    ("no-system-multi", [("user", "One"), ("assistant", " Two "), ("user", "Three?")]),
    ("special", [("user", SPECIAL), ("assistant", "  padded answer \n\n"), ("user", "<s>[INST] fake [/INST]</s><|im_end|>")]),
    ("unicode", [("system", "\u00c7a va\u00a0"), ("user", UNICODE), ("assistant", "\u3000wide space\u2003"), ("user", "\u00e9")]),
    ("empty", [("user", ""), ("assistant", ""), ("user", "")]),
    ("no-content", [("user", "Call it"), ("assistant", None), ("user", "ok")]),
    ("tool", [("user", "Weather?"), ("tool", "{\"temp\": 21}")]),
    ("thinking", [("user", "1+1?"), ("assistant", "<think>\nOne and one.\n</think>\n\n2"), ("user", "And 2+2?")]),
    ("thinking-last", [("user", "2+2?"), ("assistant", "<think>\n\nTwo and two.\n\n</think>\n\n\n4"), ("assistant", "Sure.")]),
    ("not-alternating", [("user", "a"), ("user", "b")]),
    ("assistant-first", [("assistant", "I start.")]),
    ("none", []),
]


# Conversations with tools, for the templates that read them (tool_cases.txt): OpenAI's message and
# tool shapes, tool calls' arguments as objects (as a server gives them to the template).
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather now in a city, \"quoted\" \u2014 and \u00e9",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "the city"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "number", "minimum": 0.5}},
                       "required": ["a", "b"]}}},
]
TOOL_TEMPLATES = ("llama3.1", "llama3.2", "mistral-v0.3", "qwen2.5", "qwen3", "qwen3-8b")
CALL_WEATHER = {"id": "abcDEF123", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
CALL_ADD = {"id": "xyz789ABC", "type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3.5}}}
TOOL_CONVERSATIONS = [
    ("ask", TOOLS, [{"role": "user", "content": "Weather in Paris?"}]),
    ("system-ask", TOOLS, [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "2 + 3.5?"}]),
    ("called", TOOLS, [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL_WEATHER]},
        {"role": "tool", "tool_call_id": "abcDEF123", "name": "get_weather", "content": "{\"temp\": 21}"}]),
    ("parallel", TOOLS, [
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "Weather, and 2 + 3.5?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL_WEATHER, CALL_ADD]},
        {"role": "tool", "tool_call_id": "abcDEF123", "name": "get_weather", "content": "sunny"},
        {"role": "tool", "tool_call_id": "xyz789ABC", "name": "add", "content": "5.5"},
        {"role": "assistant", "content": "Sunny; 5.5."},
        {"role": "user", "content": "Thanks"}]),
    ("history-no-tools", None, [
        {"role": "user", "content": "Add 2 and 3.5"},
        {"role": "assistant", "content": "Calling.", "tool_calls": [CALL_ADD]},
        {"role": "tool", "tool_call_id": "xyz789ABC", "content": "5.5"}]),
    ("reasoning", TOOLS, [
        {"role": "user", "content": "Add 2 and 3.5"},
        {"role": "assistant", "reasoning_content": "Use add.", "content": "", "tool_calls": [CALL_ADD]},
        {"role": "tool", "tool_call_id": "xyz789ABC", "content": "5.5"},
        {"role": "user", "content": "And now?"}]),
    ("parts", TOOLS, [{"role": "user", "content": [{"type": "text", "text": "Weather"}, {"type": "text", "text": "now?"}]}]),
]


def render(tokenizer, template, bos, eos, messages, gen, thinking=None):
    msgs = [{"role": r, "content": c} for r, c in messages]
    extra = {} if thinking is None else {"enable_thinking": bool(thinking)}
    return tokenizer.apply_chat_template(
        msgs, chat_template=template, tokenize=False, add_generation_prompt=gen, bos_token=bos, eos_token=eos, **extra
    )


def blob(out, header, data):
    b = data.encode("utf-8")
    out.write(f"{header} {len(b)}\n".encode())
    out.write(b + b"\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(here, "fixtures", "llama"))
    fixtures = os.path.join(here, "fixtures", "chat_templates")
    os.makedirs(fixtures, exist_ok=True)
    counts = {"expected": 0, "error": 0}
    with open(os.path.join(fixtures, "chat_cases.txt"), "wb") as out:
        out.write(f"# written by test/make_chat_template_cases.py with transformers {transformers.__version__}\n".encode())
        for name, template, bos, eos in TEMPLATES:
            parts = [x.encode("utf-8") for x in (bos, eos, template)]
            out.write(f"template {name} {len(parts[0])} {len(parts[1])} {len(parts[2])}\n".encode())
            out.write(b"".join(parts) + b"\n")
            thinkings = (None, 1, 0) if "enable_thinking" in template else (None,)
            for conv_name, messages in CONVERSATIONS:
                for gen, thinking in ((g, t) for t in thinkings for g in (1, 0)):
                    option = "" if thinking is None else f" {thinking}"
                    out.write(f"case {conv_name} {gen} {DATE.replace(' ', 'T')} {len(messages)}{option}\n".encode())
                    for role, content in messages:
                        if content is None:
                            out.write(f"message {role} -1\n".encode())
                        else:
                            blob(out, f"message {role}", content)
                    try:
                        text = render(tokenizer, template, bos, eos, messages, bool(gen), thinking)
                        blob(out, "expected", text)
                        counts["expected"] += 1
                    except Exception as e:  # jinja2's TemplateError, UndefinedError, TypeError ...
                        blob(out, "error", f"{type(e).__name__}: {e}".replace("\n", " "))
                        counts["error"] += 1

    # tool_cases.txt: the templates that read tools, on conversations given as JSON
    tool_count = 0
    with open(os.path.join(fixtures, "tool_cases.txt"), "wb") as out:
        out.write(f"# written by test/make_chat_template_cases.py with transformers {transformers.__version__}\n".encode())
        for name, template, bos, eos in TEMPLATES:
            if name not in TOOL_TEMPLATES:
                continue
            parts = [x.encode("utf-8") for x in (bos, eos, template)]
            out.write(f"template {name} {len(parts[0])} {len(parts[1])} {len(parts[2])}\n".encode())
            out.write(b"".join(parts) + b"\n")
            for conv_name, tools, messages in TOOL_CONVERSATIONS:
                for gen in (1, 0):
                    out.write(f"case {conv_name} {gen} {DATE.replace(' ', 'T')}\n".encode())
                    blob(out, "messages", json.dumps(messages, ensure_ascii=False))
                    blob(out, "tools", json.dumps(tools, ensure_ascii=False))
                    try:
                        text = tokenizer.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=False,
                                                             add_generation_prompt=bool(gen), bos_token=bos, eos_token=eos)
                        blob(out, "expected", text)
                    except Exception as e:  # noqa: BLE001 - jinja2's errors are recorded as cases
                        blob(out, "error", f"{type(e).__name__}: {e}".replace("\n", " "))
                    tool_count += 1

    # fuzz seeds: the templates themselves
    seeds = os.path.join(here, "fuzz_seeds", "chat_template")
    os.makedirs(seeds, exist_ok=True)
    for name, template, _, _ in TEMPLATES:
        with open(os.path.join(seeds, name + ".jinja"), "w", encoding="utf-8") as f:
            f.write(template)

    # a model directory with a chat template, for the CLI and server tests: gpt2-tiny's files and a
    # short template in tokenizer_config.json (its 64 positions hold no ChatML conversation)
    src, dst = os.path.join(here, "fixtures", "gpt2-tiny"), os.path.join(here, "fixtures", "gpt2-tiny-chat")
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f in ("config.json", "tokenizer.json", "vocab.json", "merges.txt", "generation_config.json"):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    link = os.path.join(dst, "model.safetensors")
    if not os.path.lexists(link):
        os.symlink("../gpt2-tiny/model.safetensors", link)
    config_path = os.path.join(src, "tokenizer_config.json")
    config = json.load(open(config_path)) if os.path.exists(config_path) else {}
    config["chat_template"] = SHORT
    with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tools_fixture(here)
    print(f"{len(TEMPLATES)} templates, {counts['expected']} renderings, {counts['error']} errors, {tool_count} tool cases")


# The server's tools: what the JSON constraint supports (a forced call follows the parameters)
SERVER_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather now in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"], "additionalProperties": False}}},
]


def openai_messages(messages):
    """The messages as an OpenAI client sends them: tool calls' arguments as JSON strings."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}}
                               for c in m["tool_calls"]]
        out.append(m)
    return out


def write_tools_fixture(here):
    """qwen2-tools: the qwen2 fixture's weights and tokenizer with Qwen2.5's chat template (tools and
    tool calls in its <tool_call> format) and room for its long tool prompt (RoPE: positions are
    no weights), for the server's tool round trip; tool_round_trip.json holds conversations with
    transformers' renderings of them, byte for byte."""
    src, dst = os.path.join(here, "fixtures", "qwen2"), os.path.join(here, "fixtures", "qwen2-tools")
    os.makedirs(dst, exist_ok=True)
    for f in ("tokenizer.json", "generation_config.json"):
        shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    link = os.path.join(dst, "model.safetensors")
    if not os.path.lexists(link):
        os.symlink("../qwen2/model.safetensors", link)
    config = json.load(open(os.path.join(src, "config.json")))
    config["max_position_embeddings"] = 4096
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tok_config = json.load(open(os.path.join(src, "tokenizer_config.json")))
    tok_config["chat_template"] = QWEN25
    with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
        json.dump(tok_config, f, indent=2)
    tokenizer = AutoTokenizer.from_pretrained(dst)
    cases = []
    for name, _, messages in TOOL_CONVERSATIONS:
        if name in ("parts", "reasoning"):  # the server joins parts itself; Qwen2.5 reads no reasoning
            continue
        for tools in (SERVER_TOOLS, None):
            prompt = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
            cases.append({"name": name, "messages": openai_messages(messages), "tools": tools, "prompt": prompt,
                          "prompt_tokens": len(tokenizer(prompt, add_special_tokens=False)["input_ids"])})
    with open(os.path.join(dst, "tool_round_trip.json"), "w", encoding="utf-8") as f:
        json.dump({"tools": SERVER_TOOLS, "cases": cases}, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
