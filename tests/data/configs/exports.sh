export TAOTOKEN_API_KEY="sk-你的TaoToken密钥" export ANTHROPIC_BASE_URL="https://taotoken.net/api" export ANTHROPIC_AUTH_TOKEN="$TAOTOKEN_API_KEY"
export OPENAI_BASE_URL="https://taotoken.net/api/v1"
export API_TIMEOUT_MS=10000
export OPENAI_MAX_RETRIES=5
