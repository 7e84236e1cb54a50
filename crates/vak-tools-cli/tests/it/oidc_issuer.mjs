// A real OAuth 2.1 authorization server for vak-tools' tests (oauth.rs): oidc-provider on
// 127.0.0.1, issuing RS256 JWT access tokens for the resource a request names, by client
// credentials (clients `reader`: vak:read, `writer`: vak:read vak:write) and by authorization
// code with PKCE for clients that register themselves (RFC 7591), the person at its pages
// approving every request as `alice`.
// Usage: node oidc_issuer.mjs PORT DEFAULT_RESOURCE
import Provider from 'oidc-provider';

const [port, resource] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const client = (id, scope) => ({
  client_id: id, client_secret: `${id}-secret`, grant_types: ['client_credentials'],
  redirect_uris: [], response_types: [], scope,
});
const provider = new Provider(issuer, {
  clients: [client('reader', 'vak:read'), client('writer', 'vak:read vak:write')],
  scopes: ['openid', 'offline_access', 'vak:read', 'vak:write', 'vak:full'],
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  // A registered client may ask for any of the server's scopes (a step-up adds vak:write).
  extraClientMetadata: {
    properties: ['scope'],
    validator(ctx, key, value, metadata) {
      if (key === 'scope') metadata.scope = 'offline_access vak:read vak:write vak:full';
    },
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => ({
        scope: 'vak:read vak:write vak:full', audience: indicator,
        accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
// The person at the issuer's pages, approving every request as `alice`.
provider.use(async (ctx, next) => {
  if (!ctx.path.startsWith('/interaction/')) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (details.prompt.name === 'login') {
    return provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: 'alice' } }, { mergeWithLastSubmission: false });
  }
  const grant = details.grantId ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId } }, { mergeWithLastSubmission: true });
});
provider.listen(Number(port), '127.0.0.1', () => console.log(`listening ${issuer}`));
