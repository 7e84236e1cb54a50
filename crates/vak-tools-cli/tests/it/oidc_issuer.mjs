// A real OAuth 2.1 authorization server for vak-tools' tests: oidc-provider on 127.0.0.1,
// issuing JWT access tokens (RS256) by client credentials for the resource the test names.
// Usage: node issuer.mjs PORT RESOURCE
import Provider from 'oidc-provider';

const [port, resource] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope,
});
const provider = new Provider(issuer, {
  clients: [
    client('reader', 'vak:read'),
    client('writer', 'vak:read vak:write'),
  ],
  scopes: ['vak:read', 'vak:write', 'vak:full'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => ({
        scope: 'vak:read vak:write vak:full',
        audience: indicator,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
