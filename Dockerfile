# The operator's image: the TypeScript compiled to JavaScript by tsc (what `make build` runs),
# on Node 24 with the production dependencies only. tsconfig's rewriteRelativeImportExtensions
# turns the sources' relative ".ts" import specifiers into ".js", so the output runs on plain
# node, without tsx.
#
#   docker build -t ghcr.io/configbutler/gitops-reverser-ts:dev .
#
# No dependency needs an install script at run time (only esbuild, behind tsx, and the `node`
# devDependency have one, and neither is used here), so both installs skip them: the build stage
# does not download a second Node.js.

FROM node:24-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY generated generated
COPY internal internal
COPY controllers controllers
# The image's node runs tsc directly: node_modules/.bin/node is the `node` devDependency's shim,
# which --ignore-scripts leaves without its binary.
RUN node node_modules/typescript/bin/tsc -p tsconfig.json

FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production
# package.json says "type": "module", which makes the compiled .js files ES modules.
COPY package.json ./
COPY --from=deps /app/node_modules node_modules
COPY --from=build /src/dist/generated dist/generated
COPY --from=build /src/dist/internal dist/internal
COPY --from=build /src/dist/controllers dist/controllers
# Numeric, so the kubelet can check runAsNonRoot; config/manager runs it as 65532 too.
USER 65532:65532
ENTRYPOINT ["node", "dist/controllers/main.js"]
